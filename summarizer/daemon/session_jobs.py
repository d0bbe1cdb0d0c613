"""Daemon duties for sessions: todos.json on every change, resume state on triggers, retention."""

from __future__ import annotations

import logging
import sqlite3
from typing import TYPE_CHECKING

from indexer import Config, StatePaths, agents_ended_after, history, last_trigger
from summarizer.daemon.retention import start_retention_job
from summarizer.daemon.watermark import WatermarkListener
from summarizer.handoff.account import write_accounts
from summarizer.resume import writer as resume
from summarizer.resume.todos import session_todos, write_todos

if TYPE_CHECKING:
    from summarizer.daemon.host import DaemonHost as Daemon

__all__ = [
    "attach",
    "catch_up_sessions",
    "sync_sessions",
]

log = logging.getLogger("ctxd.sessions")
WATERMARK_KEY = "sessions.watermark"
_TRIGGERS = ("pre_compact", "session_end")
# Entries whose rows are read, and whose sessions are brought up to date, at a time. After a
# bulk catch-up the range is a million entries: its todo and trigger rows, read whole, sat
# beside the tokenizer the resume states load.
SYNC_WINDOW = 20_000


def sync_sessions(
    conn: sqlite3.Connection, paths: StatePaths, config: Config, after_id: int
) -> int:
    """Bring todos.json and trigger-time resume states up to the index; return the watermark.

    Todo lists are recomputed for every session with todo events after `after_id`; a resume
    state is written for every session with a PreCompact or SessionEnd after it, unless its
    state already covers that event (so a restart or a reset watermark never re-arms a
    context the SessionStart hook has consumed).
    """
    top = history.max_entry_id(conn)
    if top <= after_id:
        return after_id
    for low in range(after_id, top, SYNC_WINDOW):
        _sync_window(conn, paths, config, (after_id, top), (low, min(top, low + SYNC_WINDOW)))
    try:  # the account a named agent is handed when it is started again
        ended = agents_ended_after(conn, after_id, top)
        write_accounts(conn, paths, ended, config.resume.subagent_max_tokens)
    except Exception:
        log.exception("writing the agents' handoff accounts failed")
    return top


def _sync_window(
    conn: sqlite3.Connection,
    paths: StatePaths,
    config: Config,
    whole: tuple[int, int],
    window: tuple[int, int],
) -> None:
    """The todo lists and trigger states of the sessions met in one window of the whole range.

    One window at a time, so that only its sessions are held: after a bulk catch-up the range
    met ~46,000 sessions, whose names alone took ~16 MB beside the tokenizer. A session's state
    is built for its last trigger in the whole range, as one read of the range would, and is
    then skipped in later windows (it covers their triggers); a session met again in a later
    window gets its todos.json again, the same content read from the index.
    """
    low, high = window
    todo_sessions: dict[str, None] = {}
    triggers: dict[str, tuple[str, int]] = {}
    for session_id, event, entry_id in history.todo_and_trigger_events(conn, low, high):
        if event in _TRIGGERS:
            triggers[str(session_id)] = (str(event), int(entry_id))
        else:
            todo_sessions[str(session_id)] = None
    for sid in todo_sessions:
        try:
            write_todos(paths, sid, session_todos(conn, sid))
        except Exception:
            log.exception("writing todos.json of session %s failed", sid)
    for sid, met in triggers.items():
        event, entry_id = last_trigger(conn, sid, *whole) or met
        state = resume.read_state(paths, sid)
        if state is not None and int(state.get("watermark", 0) or 0) >= entry_id:
            continue
        try:
            resume.update_session(conn, paths, config, sid, event)
        except Exception:
            log.exception("writing the resume state of session %s failed", sid)


def attach(daemon: Daemon) -> None:
    """Wire the session duties into a started daemon (called from its on_start)."""
    listener = WatermarkListener(
        daemon,
        WATERMARK_KEY,
        lambda conn, after: sync_sessions(conn, daemon.paths, daemon.config, after),
        waits_for_catch_up=True,  # resume states and accounts load the tokenizer
    )
    daemon.listeners.append(listener)
    try:
        listener()  # what was indexed while no daemon ran (catch-up by readers)
    except Exception:
        log.exception("initial session sync failed; the next batch retries it")
    start_retention_job(daemon)
    from summarizer.daemon import task_jobs, team_job

    task_jobs.attach(daemon)
    team_job.start_team_shipping(daemon)  # when a team database is configured


def catch_up_sessions(paths: StatePaths, config: Config | None = None) -> str:
    """catch_up (I12), then, with no daemon to do it, sync todos.json and trigger states.

    Returns why nothing could be brought up to date ("" if it was): the state dir cannot be
    written (a read-only mount, say); the index is then read as it is.
    """
    from indexer import IndexBusyError, catch_up, load_config, writer_lock

    cfg = config if config is not None else load_config(paths.config)
    result = catch_up(paths, cfg)
    if result.read_only:
        return result.read_only
    if result.by_daemon or not paths.index_db.exists():
        return ""  # the daemon's listener does it
    try:
        with writer_lock(paths, wait_s=0.5):
            conn = history.connect(paths.index_db)
            try:
                after = int(history.get_meta(conn, WATERMARK_KEY, "0") or 0)
                top = sync_sessions(conn, paths, cfg, after)
                if top != after:
                    with history.transaction(conn):
                        history.set_meta(conn, WATERMARK_KEY, str(top))
            finally:
                conn.close()
    except IndexBusyError:
        pass  # a daemon started meanwhile: its listener syncs
    return ""
