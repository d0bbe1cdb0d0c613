"""The session catalog: what each committed batch adds to its sessions' rows.

The first prompt and the status are those of the earliest prompt and the latest status event
by event time, not by arrival: a transcript imported after the hooks captured the rest of its
session brings older events last.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from indexer.models import Entry, HookPayload
from indexer.redact.text import redact_text


@dataclass(slots=True)
class SessionDelta:
    """What one batch changes in one session's catalog row."""

    first_ns: int
    last_ns: int
    cwd: str = ""
    title: str = ""
    first_prompt: str = ""
    first_prompt_ns: int = 0
    events: int = 0
    failures: int = 0
    status: str = ""
    status_ns: int = 0
    end_reason: str = ""
    compactions: int = 0
    host: str = ""  # the client that sent its events: "" Claude Code, "codex"


_STATUS_BY_EVENT = {
    "session_start": "active",
    "prompt": "active",
    "session_end": "ended",
    "pre_compact": "compacted",
    "post_compact": "compacted",
}


def add_to_session(deltas: dict[str, SessionDelta], e: Entry, p: HookPayload) -> None:
    """Count one stored entry in its session's delta."""
    ts_ns, event = e.ts_ns, e.event
    d = deltas.get(e.session_id)
    if d is None:
        d = deltas[e.session_id] = SessionDelta(ts_ns, ts_ns)
    elif ts_ns < d.first_ns:
        d.first_ns = ts_ns
    elif ts_ns > d.last_ns:
        d.last_ns = ts_ns
    d.events += 1
    if e.host:
        d.host = e.host
    if e.cwd:
        d.cwd = e.cwd
    if p.session_title:
        d.title = redact_text(p.session_title)
    status = _STATUS_BY_EVENT.get(event)
    if status is None:  # most events: a tool call or its result
        if event in ("tool_failure", "agent_failed"):
            d.failures += 1
        return
    if event == "prompt" and (not d.first_prompt or ts_ns < d.first_prompt_ns):
        d.first_prompt, d.first_prompt_ns = e.text[:500], ts_ns
    d.compactions += event == "post_compact"
    if ts_ns >= d.status_ns:
        d.status, d.status_ns = status, ts_ns
        d.end_reason = p.reason if status == "ended" else ""


def update_sessions(conn: sqlite3.Connection, deltas: dict[str, SessionDelta]) -> None:
    """Fold one batch's deltas into their sessions' catalog rows (one statement for all)."""
    # Every SET expression reads the row as it was before the statement (SQL semantics).
    # A row stored before the *_ns columns existed has 0 there: its first prompt is kept, and
    # any later status wins, as before.
    conn.executemany(
        "INSERT INTO sessions(session_id, first_ns, last_ns, cwd, title, first_prompt, events,"
        " failures, status, end_reason, compactions, first_prompt_ns, status_ns, host)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
        " ON CONFLICT(session_id) DO UPDATE SET first_ns=min(first_ns, excluded.first_ns),"
        " last_ns=max(last_ns, excluded.last_ns),"
        " cwd=CASE WHEN excluded.cwd<>'' THEN excluded.cwd ELSE cwd END,"
        " title=CASE WHEN excluded.title<>'' THEN excluded.title ELSE title END,"
        f" first_prompt=CASE WHEN {_EARLIER_PROMPT} THEN excluded.first_prompt"
        " ELSE first_prompt END,"
        f" first_prompt_ns=CASE WHEN {_EARLIER_PROMPT} THEN excluded.first_prompt_ns"
        " ELSE first_prompt_ns END,"
        " events=events+excluded.events, failures=failures+excluded.failures,"
        f" status=CASE WHEN {_LATER_STATUS} THEN excluded.status ELSE status END,"
        f" end_reason=CASE WHEN NOT {_LATER_STATUS} THEN end_reason"
        " WHEN excluded.status='ended' THEN excluded.end_reason"
        " WHEN excluded.status='active' THEN '' ELSE end_reason END,"
        f" status_ns=CASE WHEN {_LATER_STATUS} THEN excluded.status_ns ELSE status_ns END,"
        " compactions=compactions+excluded.compactions,"
        " host=CASE WHEN excluded.host<>'' THEN excluded.host ELSE host END",
        [
            (
                session_id,
                d.first_ns,
                d.last_ns,
                d.cwd,
                d.title,
                d.first_prompt,
                d.events,
                d.failures,
                d.status,
                d.end_reason,
                d.compactions,
                d.first_prompt_ns,
                d.status_ns,
                d.host,
            )
            for session_id, d in deltas.items()
        ],
    )


_EARLIER_PROMPT = (
    "(excluded.first_prompt<>'' AND (first_prompt='' OR"
    " (first_prompt_ns>0 AND excluded.first_prompt_ns<first_prompt_ns)))"
)
_LATER_STATUS = "(excluded.status<>'' AND excluded.status_ns>=status_ns)"


def ensure_host_column(conn: sqlite3.Connection) -> None:
    """Give an index made before hosts were recorded its sessions' host column ("": Claude
    Code, which every session recorded until then was)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}
    if "host" not in columns:
        conn.execute("ALTER TABLE sessions ADD COLUMN host TEXT NOT NULL DEFAULT ''")
