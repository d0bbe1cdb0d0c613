"""The recall tools' answers: plain functions from the state directory to budgeted text.

Each answer is a header and lines, best first; lines are added while the whole text fits the
token budget (counted with tiktoken), and a last line says how many did not fit. Every text
is redacted, whole, before it is cut or counted: what the index holds is redacted already, by
the rules of the ctxd that stored it, and an index an earlier version wrote may hold a value
a later rule knows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from indexer import (
    CtxdError,
    StatePaths,
    is_valid_session_id,
    is_valid_view_name,
    load_config,
    recall,
    redact_entry,
    redact_text,
)
from summarizer.common.failures import quoted
from summarizer.common.neutralize import neutralize
from summarizer.common.tokens import get_counter
from summarizer.resume.sessions import (
    list_sessions,
    render_package,
    resolve_session,
    resume_package,
)
from summarizer.search.service import Filters, current_connection, iso_utc, search

DEFAULT_BUDGET = 2000
MIN_BUDGET, MAX_BUDGET = 100, 10000
_NOTHING = "nothing recorded yet: ctxd has no state directory for this project"


class ToolInputError(CtxdError):
    """A tool argument that cannot be used (the message says which and why)."""


def fit(header: str, lines: list[str], budget: int) -> str:
    """`header` and as many of `lines` as fit in `budget` tokens, in order. Recorded text is
    data: a passage of it that addresses the model is left out of every line."""
    check_budget(budget)
    header, lines = redact_text(header), [redact_text(line) for line in lines]
    lines = [neutralize(line)[0] for line in lines]
    counter = get_counter()
    note_tokens = 20  # room for the "… N more" line
    total = counter.count(header)
    shown: list[str] = []
    for line in lines:
        cost = counter.count("\n" + line)
        if total + cost + note_tokens > budget:
            break
        shown.append(line)
        total += cost
    left = len(lines) - len(shown)
    note = [f"… {left} more not shown (raise budget or narrow the query)"] if left else []
    text = "\n".join([header, *shown, *note])
    # Counted per line, the sum may differ from the count of the whole by a token or two.
    return text if counter.count(text) <= budget else counter.truncate(text, budget)


def check_budget(budget: int) -> None:
    if not MIN_BUDGET <= budget <= MAX_BUDGET:
        raise ToolInputError(f"budget must be between {MIN_BUDGET} and {MAX_BUDGET} tokens")


def checked_history_args(agent_id: str, session: str | None, lines: int, budget: int) -> str:
    """Check an agent-history call's arguments (ToolInputError says what is wrong); the agent
    id as stored (lower case)."""
    check_budget(budget)
    agent = agent_id.lower()
    if not is_valid_view_name(agent):
        raise ToolInputError("invalid agent_id ('main' is the orchestrator)")
    if session is not None and not is_valid_session_id(session):
        raise ToolInputError("invalid session id")
    if not 1 <= lines <= 1000:
        raise ToolInputError("lines must be between 1 and 1000")
    return agent


@contextmanager
def _connection(paths: StatePaths) -> Iterator[sqlite3.Connection | None]:
    conn = current_connection(paths)
    try:
        yield conn
    finally:
        if conn is not None:
            conn.close()


def search_tool(
    paths: StatePaths, query: str, filters: Filters, budget: int = DEFAULT_BUDGET
) -> str:
    """Matches across every session, best first."""
    check_budget(budget)
    from summarizer.search.service import validate

    validate(query, filters)
    with _connection(paths) as conn:
        hits = search(conn, query, filters, redact=redact_text) if conn is not None else []
    if not hits:
        return f"no matches for {query!r}"
    lines = [
        f"- {h.time} {h.kind} session {h.session_id} agent {h.agent_id or '-'}: "
        + " ".join(h.snippet.split())
        for h in hits
    ]
    header = f"{len(hits)} matches for {query!r} in the recorded text, best first:"
    return fit(header, lines, budget)


def sessions_tool(paths: StatePaths, limit: int = 20, budget: int = DEFAULT_BUDGET) -> str:
    """The newest sessions with their titles and counts."""
    check_budget(budget)
    if not 1 <= limit <= 200:
        raise ToolInputError("limit must be between 1 and 200")
    with _connection(paths) as conn:
        infos = list_sessions(conn, limit) if conn is not None else []
    if not infos:
        return "no sessions recorded yet"
    lines = [
        f"- {i.session_id} started {i.started} last {i.last_activity} {i.status}: "
        f"{i.events} events, {i.agents} agents, {i.failures} failures — {i.title}"
        for i in infos
    ]
    return fit("Sessions, newest first:", lines, budget)


def session_tool(paths: StatePaths, session: str, budget: int = DEFAULT_BUDGET) -> str:
    """A session's resume package (summary, open todos and failures, agents, files)."""
    check_budget(budget)
    with _connection(paths) as conn:
        if conn is None:
            return _NOTHING
        info = resolve_session(conn, session)
        pkg = resume_package(conn, paths, load_config(paths.config), info)
    text = redact_text(render_package(pkg).strip())  # whole: a key may span lines
    head, _, body = text.partition("\n")
    return fit(head, body.split("\n"), budget)


def agent_history_tool(
    paths: StatePaths,
    agent_id: str,
    session: str | None = None,
    lines: int = 50,
    budget: int = DEFAULT_BUDGET,
) -> str:
    """One agent's latest entries (newest last), like `ctxd read`."""
    agent = checked_history_args(agent_id, session, lines, budget)
    with _connection(paths) as conn:
        if conn is None:
            return _NOTHING
        sid = resolve_session(conn, session).session_id if session else None
        sid = sid or recall.latest_session_with_agent(conn, agent)
        entries = recall.latest_agent_entries(conn, sid, agent, lines) if sid else []
    if not entries:
        return f"no entries of agent {agent!r}" + (f" in session {sid}" if sid else "")
    out = []
    for se in reversed(entries):  # newest first, so a tight budget keeps the latest
        e = redact_entry(se.entry)
        detail = e.error or e.output_summary or e.instruction
        line = f"- {iso_utc(e.ts_ns)} [{e.event}] {e.description}"
        out.append(line + (f" — recorded: {quoted(detail, 300)}" if detail else ""))
    return fit(f"Agent {agent} in session {sid}, newest first:", out, budget)


def failures_tool(
    paths: StatePaths, session: str | None = None, budget: int = DEFAULT_BUDGET
) -> str:
    """Failures: unresolved first, then resolved ones with what fixed them."""
    check_budget(budget)
    if session is not None and not is_valid_session_id(session):
        raise ToolInputError("invalid session id")
    with _connection(paths) as conn:
        rows = recall.failures(conn, 200, session) if conn is not None else []
    if not rows:
        return "no failures recorded"
    lines = []
    # The description holds the error once, quoted as recorded.
    for row in rows:
        desc, command, _error, prevention = (redact_text(t or "") for t in row[:4])
        count, last_ns, _resolved_ns, is_open, sid = row[4:]
        state = "UNRESOLVED" if is_open else "resolved"
        line = f"- [{state}] {desc} (×{count}, last {iso_utc(last_ns)}, session {sid[:8]})"
        if command:
            line += f"\n  command: {command}"
        if prevention:
            line += f"\n  {'fixed by' if not is_open else 'prevention'}: {prevention}"
        lines.append(line)
    return fit("Failures, unresolved first:", lines, budget)


def decisions_tool(paths: StatePaths, budget: int = DEFAULT_BUDGET) -> str:
    """Constraints in force, then decisions, best-ranked first."""
    check_budget(budget)
    with _connection(paths) as conn:
        rules = recall.active_constraints(conn, 100) if conn is not None else []
        decided = recall.decisions(conn, 100) if conn is not None else []
    if not rules and not decided:
        return "no decisions or constraints recorded"
    lines = [f"- [constraint] {d} (session {s[:8]}, {iso_utc(t)})" for d, s, t in rules]
    lines += [f"- [decision] {d} (session {s[:8]}, {iso_utc(t)})" for d, s, t, _n in decided]
    return fit("Constraints in force, then decisions:", lines, budget)
