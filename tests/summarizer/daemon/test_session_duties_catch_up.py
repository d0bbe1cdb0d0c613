"""During a bulk catch-up the session duties (they load the tokenizer) wait for its end; then
they write the same files as without waiting, before the compactions that wait too may start."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import CORPUS, poll

from indexer import history
from indexer.config import Config
from indexer.hook import build_line
from indexer.ingest import IngestStats
from indexer.paths import StatePaths
from indexer.writer import catch_up
from summarizer.daemon import service, session_jobs, task_jobs
from summarizer.daemon.service import Daemon
from summarizer.daemon.watermark import WatermarkListener

HOOKS = CORPUS / "hooks"
T0 = 1_790_000_000_000_000_000
pytestmark = pytest.mark.skipif(not HOOKS.is_dir(), reason="needs the hook corpus")
_CLOCK_KEYS = {"created_at", "created_ns"}  # written at build time
_CLOCK_TEXT = re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")


def spooled_corpus(root: Path) -> StatePaths:
    """Every corpus hook payload in one spool segment, not indexed yet; a second segment
    (written when the daemon runs) must not be needed."""
    paths = StatePaths(root)
    paths.ensure()
    lines = []
    for path in sorted(HOOKS.rglob("*.jsonl")):
        for raw in path.read_bytes().splitlines():
            if raw.strip():
                lines.append(build_line(raw, T0 + len(lines), 4242))
    (paths.spool / "20260101T00.jsonl").write_bytes(b"".join(lines))
    return paths


def outputs(paths: StatePaths) -> dict[str, Any]:
    """Every file the session duties write, JSON without its build-time clock fields."""
    found: dict[str, Any] = {}
    for folder in (paths.sessions, paths.root / "resume", paths.root / "handoff"):
        for p in sorted(folder.rglob("*")) if folder.is_dir() else []:
            if not p.is_file() or p.suffix == ".jsonl":
                continue  # the views are the ingest's
            data = p.read_bytes()
            if p.suffix == ".json":
                loaded = json.loads(data)
                if isinstance(loaded, dict):
                    loaded = {k: v for k, v in loaded.items() if k not in _CLOCK_KEYS}
                found[str(p.relative_to(paths.root))] = loaded
            else:
                found[str(p.relative_to(paths.root))] = _CLOCK_TEXT.sub(b"<now>", data)
    return found


def without_waiting(root: Path) -> dict[str, Any]:
    """What the session duties write over the whole corpus, run at once after indexing it."""
    paths = spooled_corpus(root)
    catch_up(paths, Config())
    conn = sqlite3.connect(paths.index_db)
    try:
        session_jobs.sync_sessions(conn, paths, Config(), 0)
    finally:
        conn.close()
    return outputs(paths)


def test_session_duties_wait_for_the_end_of_a_bulk_catch_up_then_write_the_same_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = without_waiting(tmp_path / "direct" / "state")
    assert sum(name.endswith("todos.json") for name in expected) > 10
    assert any(name.startswith("resume/") for name in expected)

    paths = spooled_corpus(tmp_path / "daemon" / "state")
    backlog = sum(p.stat().st_size for p in paths.spool.glob("*.jsonl"))
    monkeypatch.setattr(service, "BULK_BACKLOG_BYTES", backlog)  # the corpus is a bulk catch-up
    daemon = Daemon(paths, Config())
    seen: list[dict[str, Any]] = []
    sessions: list[WatermarkListener] = []

    def probe(stats: IngestStats) -> None:
        """Called after the daemon's own listeners: what they did for this call."""
        assert daemon.writer is not None
        conn = daemon.writer.conn
        seen.append(
            {
                "lines": stats.lines,
                "catching_up": daemon.catching_up.is_set(),
                "top": history.max_entry_id(conn),
                "sessions": int(history.get_meta(conn, session_jobs.WATERMARK_KEY, "0")),
                "tasks": int(history.get_meta(conn, task_jobs.WATERMARK_KEY, "0")),
                "outputs": len(outputs(paths)),
            }
        )

    def on_start(d: Any) -> None:
        session_jobs.attach(d)  # the daemon's session and task duties, as `ctxd run` wires them
        sessions.extend(x for x in d.listeners if getattr(x, "key", "") == session_jobs.WATERMARK_KEY)
        d.listeners.append(probe)

    thread = threading.Thread(target=daemon.run, kwargs={"on_start": on_start})
    thread.start()
    try:
        poll(lambda: len(seen) >= 2, timeout=60)
        batch, end = seen[0], seen[1]
        # The catch-up's batch: the task duty ran; the session duties waited, writing nothing.
        assert batch["lines"] > 5000 and batch["catching_up"]
        assert batch["tasks"] == batch["top"]
        assert batch["sessions"] == 0 and batch["outputs"] == 0
        assert sessions[0].deferred == 1
        # Its end: the session duties ran over it all, while compactions still wait.
        assert end["lines"] == 0 and end["catching_up"]
        assert end["sessions"] == end["top"] == batch["top"]
        poll(lambda: not daemon.catching_up.is_set())
    finally:
        daemon.request_stop()
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert outputs(paths) == expected
