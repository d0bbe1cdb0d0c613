"""During a bulk catch-up the session duties (they load the tokenizer) wait for its end; then
they write the same files as without waiting, before the compactions that wait too may start."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import HOOKS, duty_outputs, spooled_corpus
from helpers import poll

from indexer.config import Config
from indexer.ingest.ingestor import IngestStats
from indexer.queries import history
from indexer.writer.catch_up import catch_up
from summarizer.daemon import service, session_jobs, task_jobs
from summarizer.daemon.service import Daemon
from summarizer.daemon.watermark import WatermarkListener

pytestmark = pytest.mark.skipif(not HOOKS.is_dir(), reason="needs the hook corpus")


def without_waiting(root: Path) -> dict[str, Any]:
    """What the session duties write over the whole corpus, run at once after indexing it."""
    paths = spooled_corpus(root)
    catch_up(paths, Config())
    conn = sqlite3.connect(paths.index_db)
    try:
        session_jobs.sync_sessions(conn, paths, Config(), 0)
    finally:
        conn.close()
    return duty_outputs(paths)


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
                "outputs": len(duty_outputs(paths)),
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
    assert duty_outputs(paths) == expected
