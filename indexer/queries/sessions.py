"""Read one session whole from the index: its entries and its agents, for the session page."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from indexer.index import store

__all__ = [
    "AgentRow",
    "agent_last_run",
    "agents_ended_after",
    "agents_of_sessions",
    "last_trigger",
    "session_agents",
    "session_entries",
    "session_entry_count",
]


@dataclass(frozen=True, slots=True)
class AgentRow:
    """One agent of a session as the index knows it."""

    agent_id: str
    agent_type: str
    cc_agent_id: str
    explicit: bool  # named by an `AgentId:` line in its prompt
    started_ns: int
    completed_ns: int
    status: str
    description: str


def session_entry_count(conn: sqlite3.Connection, session_id: str) -> int:
    """How many entries the session has."""
    row = conn.execute("SELECT count(*) FROM entries WHERE session_id=?", (session_id,)).fetchone()
    return int(row[0])


def session_entries(
    conn: sqlite3.Connection, session_id: str, limit: int
) -> list[store.StoredEntry]:
    """The session's last `limit` entries, oldest first (by event time)."""
    rows = conn.execute(
        f"SELECT {store.ENTRY_COLUMNS} FROM entries WHERE session_id=?"
        " ORDER BY ts_ns DESC, pid DESC LIMIT ?",
        (session_id, limit),
    ).fetchall()
    return [store.row_to_entry(r) for r in reversed(rows)]


def session_agents(conn: sqlite3.Connection, session_id: str) -> list[AgentRow]:
    """The session's agents in the order they started."""
    rows = conn.execute(
        "SELECT agent_id, agent_type, cc_agent_id, explicit, started_ns, completed_ns, status,"
        " description FROM agents WHERE session_id=? ORDER BY started_ns, agent_id",
        (session_id,),
    ).fetchall()
    return [
        AgentRow(
            agent_id=str(r[0]),
            agent_type=str(r[1]),
            cc_agent_id=str(r[2]),
            explicit=bool(r[3]),
            started_ns=int(r[4]),
            completed_ns=int(r[5]),
            status=str(r[6]),
            description=str(r[7]),
        )
        for r in rows
    ]


def agent_last_run(
    conn: sqlite3.Connection, agent_id: str
) -> tuple[AgentRow, list[store.StoredEntry]] | None:
    """A named agent's most recent run: its row and its entries from its last start on."""
    row = conn.execute(
        "SELECT session_id FROM agents WHERE agent_id=? ORDER BY last_ns DESC LIMIT 1",
        (agent_id,),
    ).fetchone()
    if row is None:
        return None
    session_id = str(row[0])
    agent = next(a for a in session_agents(conn, session_id) if a.agent_id == agent_id)
    start = conn.execute(
        "SELECT coalesce(max(id), 0) FROM entries WHERE session_id=? AND agent_id=?"
        " AND event='agent_start'",
        (session_id, agent_id),
    ).fetchone()
    rows = conn.execute(
        f"SELECT {store.ENTRY_COLUMNS} FROM entries WHERE session_id=? AND agent_id=? AND id>=?"
        " ORDER BY id LIMIT 2000",
        (session_id, agent_id, int(start[0])),
    ).fetchall()
    return agent, [store.row_to_entry(r) for r in rows]


def agents_ended_after(conn: sqlite3.Connection, after_id: int, top_id: int) -> list[str]:
    """Named (`AgentId:`) agents whose run ended in entries after_id < id <= top_id."""
    rows = conn.execute(
        "SELECT DISTINCT e.agent_id FROM entries e JOIN agents a"
        " ON a.session_id=e.session_id AND a.agent_id=e.agent_id"
        " WHERE e.id>? AND e.id<=? AND a.explicit=1"
        " AND e.event IN ('agent_complete','agent_failed','subagent_stop')",
        (after_id, top_id),
    ).fetchall()
    return [str(r[0]) for r in rows]


def agents_of_sessions(conn: sqlite3.Connection, session_ids: list[str]) -> list[str]:
    """The distinct agent ids that ran in any of these sessions."""
    found: dict[str, None] = {}
    for sid in session_ids:
        for (agent_id,) in conn.execute("SELECT agent_id FROM agents WHERE session_id=?", (sid,)):
            found[str(agent_id)] = None
    return list(found)


def last_trigger(
    conn: sqlite3.Connection, session_id: str, after_id: int, top_id: int
) -> tuple[str, int] | None:
    """(event, id) of a session's last PreCompact or SessionEnd in after_id < id <= top_id."""
    row = conn.execute(
        "SELECT event, id FROM entries WHERE session_id=? AND id>? AND id<=?"
        " AND event IN ('pre_compact','session_end') ORDER BY id DESC LIMIT 1",
        (session_id, after_id, top_id),
    ).fetchone()
    return None if row is None else (str(row[0]), int(row[1]))
