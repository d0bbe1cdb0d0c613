"""One session or one agent of the team's memory: what the MCP tools recall with scope "team"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from indexer import CtxdError
from summarizer.team.pg import translate_errors
from summarizer.team.reader import TeamSession, sessions_where

__all__ = ["TeamAgent", "TeamEvent", "agent_history", "session_detail"]

# The streams `ctxd emit` writes outside a conversation: never "the orchestrator's history".
_NOTES_SESSIONS = ["ctxd-project-notes", "ctxd-orchestrator"]


@dataclass(frozen=True)
class TeamEvent:
    """One entry of an agent, as the team store holds it."""

    ts_ns: int
    event: str
    description: str
    detail: str  # its error, else its output, else its instruction


@dataclass(frozen=True)
class TeamAgent:
    """An agent of a team session."""

    agent_id: str
    agent_type: str
    status: str
    description: str


def session_detail(conn: Any, project: str, ref: str) -> tuple[TeamSession, list[TeamAgent]]:
    """The session `ref` names (its id or a unique prefix, on any machine) and its agents."""
    found = sessions_where(conn, project, "left(s.session_id, %s) = %s", [len(ref), ref], 3)
    exact = [s for s in found if s.info.session_id == ref]
    if len(exact) == 1 or len(found) == 1:
        chosen = (exact or found)[0]
    elif not found:
        raise CtxdError(f"no session {ref!r} in the team store of project {project}")
    else:
        raise CtxdError(f"{ref!r} names several sessions of the team; give more of the id")
    with translate_errors("reading a team session's agents"):
        rows = conn.execute(
            "SELECT agent_id, agent_type, status, description FROM ctxd.agents"
            " WHERE machine_id = %s AND session_id = %s ORDER BY started_ns, agent_id",
            (chosen.machine_id, chosen.info.session_id),
        ).fetchall()
    return chosen, [TeamAgent(str(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in rows]


def agent_history(
    conn: Any, project: str, agent_id: str, session: str | None, lines: int
) -> tuple[str, str, list[TeamEvent]]:
    """(session id, user@host, the agent's latest entries newest first) of the session given
    (id or prefix), else of the latest session of the project that has the agent."""
    with translate_errors("reading an agent's history from the team store"):
        where = "project = %s"
        args: list[Any] = [project]
        if session:
            where += " AND left(session_id, %s) = %s"
            args += [len(session), session]
        if agent_id == "main":
            where += " AND NOT (session_id = ANY(%s))"
            row = conn.execute(
                f"SELECT machine_id, session_id, user_name FROM ctxd.sessions WHERE {where}"
                " ORDER BY last_ns DESC LIMIT 1",
                [*args, _NOTES_SESSIONS],
            ).fetchone()
        else:
            row = conn.execute(
                f"SELECT machine_id, session_id, user_name FROM ctxd.agents WHERE {where}"
                " AND agent_id = %s ORDER BY last_ns DESC LIMIT 1",
                [*args, agent_id],
            ).fetchone()
        if row is None:
            return "", "", []
        host = conn.execute(
            "SELECT host FROM ctxd.machines WHERE machine_id = %s", (row[0],)
        ).fetchone()
        found = conn.execute(
            "SELECT ts_ns, event, description, error, output_summary, instruction"
            " FROM ctxd.entries WHERE machine_id = %s AND session_id = %s AND agent_id = %s"
            " ORDER BY entry_id DESC LIMIT %s",
            (row[0], row[1], agent_id, lines),
        ).fetchall()
    events = [TeamEvent(int(r[0]), str(r[1]), str(r[2]), str(r[3] or r[4] or r[5])) for r in found]
    return str(row[1]), f"{row[2]}@{host[0] if host else ''}", events
