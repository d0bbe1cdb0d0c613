"""Gather one session's page data from the index and the state directory."""

from __future__ import annotations

import os
import sqlite3

from indexer.paths import StatePaths, check_session_id
from indexer.session_query import session_agents, session_entries, session_entry_count
from summarizer.common.nofollow import is_plain_dir, read_nofollow
from summarizer.memory.store import has_memory, load_memory
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
    """Everything `render_page` needs for the session `info`."""
    sid = info.session_id
    entries = session_entries(conn, sid, max_entries)
    timeline = build_timeline(entries, session_agents(conn, sid))
    return PageData(
        session_id=sid,
        title=info.title,
        started=info.started,
        last_activity=info.last_activity,
        status=info.status + (f" ({info.end_reason})" if info.end_reason else ""),
        cwd=info.cwd,
        events=info.events,
        compactions=info.compactions,
        timeline=timeline,
        shown_entries=len(entries),
        total_entries=session_entry_count(conn, sid),
        todos=[(t.status, t.content) for t in session_todos(conn, sid)],
        memory=_memory(conn),
        handback=_handback(paths, sid, CONSUMED_FILE),
        prepared=_handback(paths, sid, CONTEXT_FILE),
    )


def _memory(conn: sqlite3.Connection) -> MemoryView:
    if not has_memory(conn):
        return MemoryView()
    mem = load_memory(conn)
    return MemoryView(
        constraints=[c.description for c in mem.constraints],
        decisions=[d.decision for d in mem.decisions],
        open_failures=[
            f.description + (f" (prevention: {f.prevention})" if f.prevention else "")
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
