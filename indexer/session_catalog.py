"""The session catalog: what each committed batch adds to its sessions' rows."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from indexer.models import Entry, HookPayload
from indexer.redact import redact_text


@dataclass
class SessionDelta:
    """What one batch changes in one session's catalog row."""

    first_ns: int
    last_ns: int
    cwd: str = ""
    title: str = ""
    first_prompt: str = ""
    events: int = 0
    failures: int = 0
    status: str = ""
    end_reason: str = ""
    compactions: int = 0


_STATUS_BY_EVENT = {
    "session_start": "active",
    "prompt": "active",
    "session_end": "ended",
    "pre_compact": "compacted",
    "post_compact": "compacted",
}


def add_to_session(deltas: dict[str, SessionDelta], e: Entry, p: HookPayload) -> None:
    """Count one stored entry in its session's delta."""
    d = deltas.get(e.session_id)
    if d is None:
        d = deltas[e.session_id] = SessionDelta(e.ts_ns, e.ts_ns)
    d.first_ns = min(d.first_ns, e.ts_ns)
    d.last_ns = max(d.last_ns, e.ts_ns)
    d.events += 1
    d.cwd = e.cwd or d.cwd
    d.title = redact_text(p.session_title) if p.session_title else d.title
    if e.event == "prompt" and not d.first_prompt:
        d.first_prompt = e.text[:500]
    d.failures += e.event in ("tool_failure", "agent_failed")
    d.compactions += e.event == "post_compact"
    status = _STATUS_BY_EVENT.get(e.event, "")
    if status:
        d.status = status
        d.end_reason = p.reason if status == "ended" else ""


def update_session(conn: sqlite3.Connection, session_id: str, d: SessionDelta) -> None:
    """Fold one batch's delta into the session's catalog row."""
    conn.execute(
        "INSERT INTO sessions(session_id, first_ns, last_ns, cwd, title, first_prompt, events,"
        " failures, status, end_reason, compactions) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
        " ON CONFLICT(session_id) DO UPDATE SET first_ns=min(first_ns, excluded.first_ns),"
        " last_ns=max(last_ns, excluded.last_ns),"
        " cwd=CASE WHEN excluded.cwd<>'' THEN excluded.cwd ELSE cwd END,"
        " title=CASE WHEN excluded.title<>'' THEN excluded.title ELSE title END,"
        " first_prompt=CASE WHEN first_prompt='' THEN excluded.first_prompt"
        " ELSE first_prompt END, events=events+excluded.events,"
        " failures=failures+excluded.failures,"
        " status=CASE WHEN excluded.status<>'' THEN excluded.status ELSE status END,"
        " end_reason=CASE WHEN excluded.status='ended' THEN excluded.end_reason"
        " WHEN excluded.status='active' THEN '' ELSE end_reason END,"
        " compactions=compactions+excluded.compactions",
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
        ),
    )
