"""Gather one session's page data from the index and the state directory, redacted."""

from __future__ import annotations

import dataclasses
import os
import sqlite3

import msgspec

from indexer import (
    StatePaths,
    StoredEntry,
    check_session_id,
    redact_entry,
    redact_text,
    session_agents,
    session_entries,
    session_entry_count,
)
from summarizer.common.nofollow import is_plain_dir, read_nofollow
from summarizer.memory.reader import load_memory
from summarizer.memory.store import has_memory
from summarizer.resume.files import CONSUMED_FILE, CONTEXT_FILE
from summarizer.resume.sessions import SessionInfo
from summarizer.resume.todos import session_todos
from summarizer.view.page import MemoryView, PageData
from summarizer.view.timeline import build_timeline

__all__ = ["MAX_ENTRIES", "page_data"]

# A page with more rows than this is slow to open and no one reads it whole; the newest win.
MAX_ENTRIES = 5000


def page_data(
    conn: sqlite3.Connection, paths: StatePaths, info: SessionInfo, max_entries: int = MAX_ENTRIES
) -> PageData:
    """Everything `render_page` needs for the session `info`.

    The page is a file people share: every text on it is redacted here, whole, before the page
    cuts it to a line. What the index holds is redacted already, by the rules of the ctxd that
    stored it; an index an earlier version wrote may hold a value a later rule knows.
    """
    sid = info.session_id
    entries = [_redacted(se) for se in session_entries(conn, sid, max_entries)]
    agents = [
        dataclasses.replace(a, description=redact_text(a.description))
        for a in session_agents(conn, sid)
    ]
    timeline = build_timeline(entries, agents)
    return PageData(
        session_id=sid,
        title=redact_text(info.title),
        started=info.started,
        last_activity=info.last_activity,
        status=info.status + (f" ({info.end_reason})" if info.end_reason else ""),
        cwd=redact_text(info.cwd),
        events=info.events,
        compactions=info.compactions,
        timeline=timeline,
        shown_entries=len(entries),
        total_entries=session_entry_count(conn, sid),
        todos=[(t.status, redact_text(t.content)) for t in session_todos(conn, sid)],
        memory=_memory(conn),
        handback=redact_text(_handback(paths, sid, CONSUMED_FILE)),
        prepared=redact_text(_handback(paths, sid, CONTEXT_FILE)),
    )


def _redacted(stored: StoredEntry) -> StoredEntry:
    entry = redact_entry(stored.entry)
    return stored if entry is stored.entry else msgspec.structs.replace(stored, entry=entry)


def _memory(conn: sqlite3.Connection) -> MemoryView:
    if not has_memory(conn):
        return MemoryView()
    mem = load_memory(conn)
    return MemoryView(
        constraints=[redact_text(c.description) for c in mem.constraints],
        decisions=[redact_text(d.decision) for d in mem.decisions],
        open_failures=[
            redact_text(f.description + (f" (prevention: {f.prevention})" if f.prevention else ""))
            for f in mem.failures
            if not f.resolved
        ],
    )


def _handback(paths: StatePaths, session_id: str, name: str) -> str:
    """A resume text of the session: the one handed back last, or the one ready for the next."""
    folder = str(paths.resume / check_session_id(session_id))
    # The resume folder and the one above it must be real folders: a symlink there would put
    # a file from outside the state directory into the page (I10), as the resume hook refuses.
    if is_plain_dir(folder) is not True or is_plain_dir(os.path.dirname(folder)) is not True:
        return ""
    path = os.path.join(folder, name)
    try:
        return read_nofollow(path).decode("utf-8", "replace")
    except OSError:
        return ""
