"""Helpers of the summarizer tests: replay payloads through the real hook, build entries, dump memory."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from ctxd_hook import hook
from indexer.index import store
from indexer.models import Entry
from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up
from summarizer.cli.commands.demo_session import demo_session

PROJECT = "/home/dev/shop"
SESSION = "5e1d0c2a-7f3b-4a9e-8c6d-1b2a3c4d5e6f"


def spool(state_dir: Path, payloads: Iterable[dict[str, Any]], cwd: str = PROJECT) -> int:
    """Append payloads to the spool through the real hook (in process); return how many."""
    n = 0
    for p in payloads:
        hook.run(json.dumps(p).encode(), {"CTXD_HOME": str(state_dir)}, cwd)
        n += 1
    return n


def replay(state_dir: Path, payloads: Iterable[dict[str, Any]], cwd: str = PROJECT) -> StatePaths:
    """Spool payloads through the hook and catch the index up; return the state paths."""
    spool(state_dir, payloads, cwd)
    paths = StatePaths(state_dir)
    catch_up(paths)
    return paths


def demo_paths(state_dir: Path) -> StatePaths:
    """A state directory holding the indexed demo session (summarizer.cli.commands.demo_session)."""
    return replay(state_dir, demo_session(PROJECT))


def base(event: str, session: str = SESSION, **extra: Any) -> dict[str, Any]:
    """A hook payload with the common fields first, as Claude Code sends it."""
    p: dict[str, Any] = {
        "session_id": session,
        "transcript_path": f"/home/dev/.claude/projects/-home-dev-shop/{session}.jsonl",
        "cwd": PROJECT,
        "permission_mode": "default",
        "hook_event_name": event,
    }
    p.update(extra)
    return p


def prompt(text: str, session: str = SESSION) -> dict[str, Any]:
    """A UserPromptSubmit payload."""
    return base("UserPromptSubmit", session, prompt=text)


def bash(
    command: str, tid: str, *, error: str | None = None, session: str = SESSION
) -> list[dict[str, Any]]:
    """PreToolUse + PostToolUse (or PostToolUseFailure with `error`) of a Bash call."""
    ti = {"command": command, "description": "run"}
    pre = base("PreToolUse", session, tool_name="Bash", tool_input=ti, tool_use_id=tid)
    if error is not None:
        post = base(
            "PostToolUseFailure", session, tool_name="Bash", tool_input=ti, tool_use_id=tid,
            error=error,
        )  # fmt: skip
    else:
        post = base(
            "PostToolUse", session, tool_name="Bash", tool_input=ti, tool_use_id=tid,
            tool_response={"stdout": "ok", "stderr": "", "interrupted": False},
        )  # fmt: skip
    return [pre, post]


def edit(path: str, new: str, tid: str, session: str = SESSION) -> dict[str, Any]:
    """A PostToolUse of an Edit of `path` (relative to the project)."""
    ti = {"file_path": f"{PROJECT}/{path}", "old_string": "x", "new_string": new}
    return base(
        "PostToolUse", session, tool_name="Edit", tool_input=ti, tool_use_id=tid,
        tool_response={"filePath": f"{PROJECT}/{path}"},
    )  # fmt: skip


def emit_payload(record: dict[str, Any], session: str = "ctxd-orchestrator") -> dict[str, Any]:
    """An explicit event as `ctxd emit` writes it."""
    return {
        "session_id": session,
        "hook_event_name": "CtxdEmit",
        "cwd": PROJECT,
        "ctxd_record": record,
    }


def entry(event: str, entry_id: int = 1, **fields: Any) -> Entry:
    """An Entry for the pure extraction tests (`detail` may be given as a dict)."""
    detail = fields.pop("detail", b"")
    if isinstance(detail, dict):
        detail = json.dumps(detail).encode()
    defaults: dict[str, Any] = {
        "file_id": 1, "offset": entry_id * 100, "line_no": entry_id, "ts_ns": entry_id * 10**9,
        "pid": 1, "session_id": SESSION, "hook_event": "PostToolUse", "event": event,
        "cwd": PROJECT,
    }  # fmt: skip
    defaults.update(fields)
    return Entry(detail=msgspec.Raw(detail), **defaults)


MEMORY_TABLES = (
    "mem_decisions",
    "mem_failures",
    "mem_constraints",
    "mem_constraint_terms",
    "mem_features",
    "mem_files",
    "mem_sessions",
)
MEMORY_META = ("mem.watermark", "mem.current_feature", "mem.last_session", "mem.last_ns")


def dump_memory(conn: sqlite3.Connection) -> dict[str, Any]:
    """Every memory table's rows (sorted) and the memory's meta keys, for equality checks."""
    out: dict[str, Any] = {
        t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in MEMORY_TABLES
    }
    out["meta"] = {k: store.get_meta(conn, k) for k in MEMORY_META}
    return out


def jobs_beside_a_writer(state_dir: Path, stack: Any, *after: Any) -> tuple[Any, Any]:
    """A daemon's compaction jobs started beside a writer the test holds (closed by `stack`),
    with one prompt indexed; the interval is an hour, so only requests start runs. `after` is
    called after each compaction, besides the daemon's own callbacks."""
    from indexer.config import Config, SummarizerConfig
    from indexer.writer.catch_up import open_writer, writer_lock
    from summarizer.daemon import jobs
    from summarizer.daemon.service import Daemon

    paths = StatePaths(state_dir)
    paths.ensure()
    spool(paths.root, [prompt("Never use tabs.")])
    daemon = Daemon(paths, Config(summarizer=SummarizerConfig(interval_s=3600.0)))
    stack.enter_context(writer_lock(paths))
    daemon.writer = open_writer(paths, daemon.config)
    stack.callback(daemon.writer.conn.close)
    daemon.writer.start()
    daemon.writer.pass_once()
    started = jobs.CompactionJobs(daemon)
    started.after_compaction.extend(after)
    started.start()
    stack.callback(started.stop)
    stack.callback(daemon.stopping.set)
    return daemon, started
