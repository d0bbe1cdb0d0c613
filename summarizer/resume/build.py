"""The SessionStart hook's build path: catch up the index, then write the resume state itself."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from indexer import StatePaths, catch_up, history, is_locked, load_config, query
from summarizer.resume import writer as resume
from summarizer.resume.files import CLEAR_HANDOFF_S
from summarizer.resume.todos import session_todos, write_todos

__all__ = ["build_for_session_start", "daemon_wait_s", "target_session"]


def build_for_session_start(state_dir: str, session_id: str, source: str, deadline: float) -> str:
    """Write the resume state the hook should inject; return its folder, or "" if none.

    Without a daemon this process takes the writer lock and indexes the spool (I12); with one
    it waits for the daemon to index what is in the spool now, then reads the index.
    `deadline` is a time.monotonic() value; past it the caller stops waiting for us.
    """
    paths = StatePaths(Path(state_dir))
    config = load_config(paths.config)
    catch_up(paths, config, wait_s=daemon_wait_s(deadline, time.monotonic()))
    if not paths.index_db.exists():
        return ""
    conn = history.connect(paths.index_db, readonly=True)
    try:
        target = target_session(conn, session_id, source)
        if not target:
            return ""
        resume.update_session(conn, paths, config, target, "session_start")
        if not is_locked(paths):
            # No daemon to keep todos.json current: this reader has the same facts at hand.
            write_todos(paths, target, session_todos(conn, target))
    finally:
        conn.close()
    return os.path.join(state_dir, "resume", target)


def daemon_wait_s(deadline: float, now: float) -> float:
    """How long to wait for a running daemon's catch-up: 60 % of the time left before
    `deadline` (the rest reads the index and writes the state), and never under 0.1 s."""
    return max(0.1, (deadline - now) * 0.6)


def target_session(conn: sqlite3.Connection, session_id: str, source: str) -> str:
    """The session whose work is resumed: this one if it has history; after `/clear` (a new
    session id) the session that just ended with reason `clear`; else ""."""
    if query.has_history(conn, session_id):
        return session_id
    if source != "clear":
        return ""
    since = time.time_ns() - int(CLEAR_HANDOFF_S * 1e9)
    return query.clear_handoff_session(conn, session_id, since)
