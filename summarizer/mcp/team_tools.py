"""The recall tools with scope "team": the same answers, from every machine of the project."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from indexer import StatePaths, is_valid_session_id, load_config
from summarizer.mcp.tools import ToolInputError, check_budget, checked_history_args, fit
from summarizer.search.service import Filters, iso_utc, validate
from summarizer.team import reader, recall
from summarizer.team import search as team_search

__all__ = [
    "agent_history_tool",
    "decisions_tool",
    "failures_tool",
    "search_tool",
    "session_tool",
    "sessions_tool",
]


@contextmanager
def _team(paths: StatePaths) -> Iterator[tuple[Any, str]]:
    conn, project = reader.open_team(paths, load_config(paths.config))
    try:
        yield conn, project
    finally:
        conn.close()


def search_tool(paths: StatePaths, query: str, filters: Filters, budget: int) -> str:
    """Matches on every machine of the project, best first, with who found them."""
    check_budget(budget)
    validate(query, filters)
    with _team(paths) as (conn, project):
        hits = team_search.search(
            conn, project, query, filters, now_ns=time.time_ns(), mark=("**", "**")
        )
    if not hits:
        return f"no matches for {query!r} in the team store"
    lines = [
        f"- {h.time} {h.kind} session {h.session_id} agent {h.agent_id or '-'} "
        f"({h.user}@{h.machine}): " + " ".join(h.snippet.split())
        for h in hits
    ]
    return fit(f"{len(hits)} team matches for {query!r}, best first:", lines, budget)


def sessions_tool(paths: StatePaths, limit: int, budget: int) -> str:
    """The project's newest sessions on every machine."""
    check_budget(budget)
    if not 1 <= limit <= 200:
        raise ToolInputError("limit must be between 1 and 200")
    with _team(paths) as (conn, project):
        found = reader.sessions(conn, project, limit)
    if not found:
        return "no sessions in the team store"
    lines = [
        f"- {s.info.session_id} ({s.user}@{s.machine}) started {s.info.started} last "
        f"{s.info.last_activity} {s.info.status}: {s.info.events} events, {s.info.agents} "
        f"agents, {s.info.failures} failures — {s.info.title}"
        for s in found
    ]
    return fit("Team sessions, newest first:", lines, budget)


def session_tool(paths: StatePaths, session: str, budget: int) -> str:
    """A team session: its catalog row and its agents."""
    check_budget(budget)
    if not is_valid_session_id(session):
        raise ToolInputError("invalid session id")
    with _team(paths) as (conn, project):
        found, agents = recall.session_detail(conn, project, session)
    i = found.info
    head = (
        f"Session {i.session_id} of {found.user}@{found.machine}: {i.title or '(untitled)'}; "
        f"started {i.started}, last {i.last_activity}, {i.status}; {i.events} events, "
        f"{i.failures} failures, {i.compactions} compactions"
    )
    lines = [
        f"- agent {a.agent_id} ({a.agent_type}, {a.status}): {' '.join(a.description.split())}"
        for a in agents
    ]
    return fit(head, lines, budget)


def agent_history_tool(
    paths: StatePaths, agent_id: str, session: str | None, lines: int, budget: int
) -> str:
    """An agent's latest entries in the team store, newest first."""
    agent = checked_history_args(agent_id, session, lines, budget)
    with _team(paths) as (conn, project):
        sid, who, events = recall.agent_history(conn, project, agent, session, lines)
    if not events:
        return f"no entries of agent {agent!r} in the team store"
    out = [
        f"- {iso_utc(e.ts_ns)} [{e.event}] {e.description}"
        + (f" — {' '.join(e.detail.split())[:300]}" if e.detail else "")
        for e in events
    ]
    return fit(f"Agent {agent} in session {sid} ({who}), newest first:", out, budget)


def failures_tool(paths: StatePaths, session: str | None, budget: int) -> str:
    """The team's failures: unresolved first, then resolved ones with what fixed them."""
    check_budget(budget)
    if session is not None and not is_valid_session_id(session):
        raise ToolInputError("invalid session id")
    with _team(paths) as (conn, project):
        items = reader.team_items(conn, project, "failure", 200, session=session)
    if not items:
        return "no failures in the team store"
    lines = []
    for i in items:
        state = "UNRESOLVED" if i.active else "resolved"
        line = (
            f"- [{state}] {i.summary} (×{i.count}, last {iso_utc(i.last_ns)}, {i.user}@{i.machine})"
        )
        if i.command:
            line += f"\n  command: {i.command}"
        if i.error and i.active:
            line += f"\n  error: {' '.join(i.error.split())[:300]}"
        if i.prevention:
            line += f"\n  {'prevention' if i.active else 'fixed by'}: {i.prevention}"
        lines.append(line)
    return fit("Team failures, unresolved first:", lines, budget)


def decisions_tool(paths: StatePaths, budget: int) -> str:
    """The team's constraints in force, then its decisions, newest first."""
    check_budget(budget)
    with _team(paths) as (conn, project):
        rules = reader.team_items(conn, project, "constraint", 100, in_force=True)
        decided = reader.team_items(conn, project, "decision", 100)
    if not rules and not decided:
        return "no decisions or constraints in the team store"
    lines = [
        f"- [{i.kind}] {i.summary} ({i.user}@{i.machine}, {iso_utc(i.last_ns)})"
        for i in (*rules, *decided)
    ]
    return fit("Team constraints in force, then decisions:", lines, budget)
