"""Resume state files: write precompact_state.json and context.md; refresh after compaction."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from typing import Any

import msgspec

from indexer import Config, StatePaths, check_session_id, ensure_private_dir, query, write_atomic
from summarizer.common.models import Memory
from summarizer.resume.facts import SessionFacts, gather_facts
from summarizer.resume.files import (
    CONSUMED_FILE,
    CONTEXT_FILE,
    LATEST_FILE,
    STATE_FILE,
    lock_folder,
    running_summary_text,
)
from summarizer.resume.state import (
    FailureNote,
    ResumeState,
    ToolCall,
    build_state,
    confidence_of,
    rank_files,
)

__all__ = [
    "CONSUMED_FILE",
    "CONTEXT_FILE",
    "LATEST_FILE",
    "STATE_FILE",
    "FailureNote",
    "ResumeState",
    "SessionFacts",
    "ToolCall",
    "build_state",
    "confidence_of",
    "gather_facts",
    "load_memory_or_none",
    "project_dir_of",
    "rank_files",
    "read_state",
    "refresh_after_compaction",
    "refresh_states",
    "running_summary_text",
    "update_session",
    "write_resume",
]

log = logging.getLogger("ctxd.resume")

# Only sessions active this recently are refreshed after a compaction run.
REFRESH_WINDOW_S = 24 * 3600
_TRIGGERS = ("pre_compact", "session_end")
# In the daemon the ingest thread (on PreCompact/SessionEnd) and the compaction's refresh may
# update a session at once, outside the index lock: reading the index and writing the files
# under one lock means the later writer always read the later index, so a state never goes back.
_UPDATE_LOCK = threading.Lock()


def load_memory_or_none(conn: sqlite3.Connection) -> Memory | None:
    """The summarizer's memory if its module is available; None (fallbacks apply) otherwise."""
    try:
        from summarizer.memory import reader as memory_module
    except ImportError:
        return None
    try:
        loaded = memory_module.load_memory(conn)
    except Exception:
        log.exception("loading the memory failed; resuming without decisions and constraints")
        return None
    return loaded if isinstance(loaded, Memory) else None


def project_dir_of(paths: StatePaths, cwd: str = "") -> str:
    """The project a state directory belongs to: the parent of `.ctxd`, else the session cwd."""
    if paths.root.name == ".ctxd":
        return str(paths.root.parent)
    return cwd or str(paths.root)


def update_session(
    conn: sqlite3.Connection,
    paths: StatePaths,
    config: Config,
    session_id: str,
    trigger: str,
    *,
    memory: Memory | None = None,
    now_ns: int | None = None,
) -> ResumeState:
    """Build and write one session's precompact_state.json and context.md."""
    with _UPDATE_LOCK:
        return _update_session(conn, paths, config, session_id, trigger, memory, now_ns)


def _update_session(
    conn: sqlite3.Connection,
    paths: StatePaths,
    config: Config,
    session_id: str,
    trigger: str,
    memory: Memory | None,
    now_ns: int | None,
) -> ResumeState:
    from summarizer.resume.context import render_context  # tiktoken: only when building

    facts = gather_facts(conn, check_session_id(session_id))
    mem = memory if memory is not None else load_memory_or_none(conn)
    state = build_state(
        facts, trigger, project_dir_of(paths, facts.cwd), mem, now_ns or time.time_ns()
    )
    # The project's running summary may describe other sessions: the notes are this one's.
    text, tokens, chars = render_context(state, "", config)
    state.context_tokens, state.context_chars = tokens, chars
    write_resume(paths, state, text)
    # What PreToolUse recalls before an edit or a command (ctxd_hook/recall.py); off, no
    # table, so the hook finds nothing.
    from summarizer.resume.recall_table import recall_rows, write_recall_table

    on = config.resume.recall_on_action
    rows = recall_rows(mem, state.open_failures, now_ns or time.time_ns()) if on else []
    write_recall_table(paths, session_id, rows)
    latest = query.latest_session(conn)
    if latest is None or latest == session_id:
        failures = [*state.open_failures, *state.project_failures]
        sessions = {f.session_id for f in failures} | set(state.decision_sessions)
        hosts = {sid: query.session_host(conn, sid) for sid in sessions if sid}
        _write_startup_memory(paths, config, state, hosts)
    return state


def _write_startup_memory(
    paths: StatePaths, config: Config, state: ResumeState, hosts: dict[str, str]
) -> None:
    # Only the most recently active session's open work is "what is open now" for a new one;
    # the project's failures and decisions come with it, whichever client their session ran in.
    from summarizer.common.tokens import get_counter
    from summarizer.resume.startup import read_team_notes, render_startup, write_startup

    counter = get_counter(config.summarizer.encoding)
    team = read_team_notes(paths, config)  # `[team] startup`: the team's part of the budget
    write_startup(paths, render_startup(state, counter.count, hosts=hosts, team=team))


def write_resume(paths: StatePaths, state: ResumeState, context: str) -> bool:
    """Write the state, then its context (unconsumed), then the project's `latest.json`.

    Skipped (False) when the SessionStart hook already consumed a context built from the same
    events: rewriting it would inject the same text twice.
    """
    folder = paths.resume / check_session_id(state.session_id)
    ensure_private_dir(folder, paths.root)
    lock = lock_folder(str(folder))
    try:
        old = read_state(paths, state.session_id)
        consumed = (folder / CONSUMED_FILE).exists() and not (folder / CONTEXT_FILE).exists()
        if consumed and old is not None and _covered(old, state):
            return False
        state_bytes = msgspec.json.format(msgspec.json.encode(state)) + b"\n"
        write_atomic(folder / STATE_FILE, state_bytes, root=paths.root)
        write_atomic(folder / CONTEXT_FILE, context.encode(), root=paths.root)
    finally:
        os.close(lock)
    latest = {
        "session_id": state.session_id,
        "trigger": state.trigger,
        "created_at": state.created_at,
        "created_ns": time.time_ns(),
    }
    write_atomic(paths.resume / LATEST_FILE, json.dumps(latest).encode(), root=paths.root)
    return True


def _covered(old: dict[str, Any], new: ResumeState) -> bool:
    try:
        return (
            int(old.get("watermark") or 0) >= new.watermark
            and int(old.get("covers_ns") or 0) >= new.covers_ns
        )
    except (TypeError, ValueError):
        return False


def read_state(paths: StatePaths, session_id: str) -> dict[str, Any] | None:
    """A session's precompact_state.json as a dict, or None if missing or not valid JSON."""
    path = paths.resume / check_session_id(session_id) / STATE_FILE
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def refresh_states(conn: sqlite3.Connection, paths: StatePaths, config: Config) -> int:
    """After a compaction: rewrite the states of recently active sessions with new events.

    A session whose newest event (SessionStart aside) is already covered is left alone, so a
    consumed context is not re-armed until something new happens in the session.
    """
    since = time.time_ns() - int(REFRESH_WINDOW_S * 1e9)
    written = 0
    memory: Memory | None = None
    for sid in query.session_ids_active_since(conn, since):
        last = query.last_entry(conn, sid)
        state = read_state(paths, sid) if last else None
        if not last or (state is not None and int(state.get("watermark", 0) or 0) >= last[0]):
            continue
        memory = memory or load_memory_or_none(conn)
        trigger = str(last[1]) if last[1] in _TRIGGERS else "compaction"
        update_session(conn, paths, config, sid, trigger, memory=memory)
        written += 1
    return written


def refresh_after_compaction(conn: sqlite3.Connection, paths: StatePaths, config: Config) -> None:
    """The resume feature's after-compaction callback: refresh_states.

    Of the shape summarizer.memory.hooks.AfterCompaction; whoever runs a compaction passes it
    (the daemon's jobs, the CLI's commands, the public ContextAgent), nothing registers it.
    """
    refresh_states(conn, paths, config)
