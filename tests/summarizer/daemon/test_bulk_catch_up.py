"""The daemon during a bulk catch-up: compactions wait for its end, listeners use a small cache."""

from __future__ import annotations

import threading
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from helpers import poll
from memory_helpers import jobs_beside_a_writer, prompt, spool

from indexer.config import Config
from indexer.index import store
from indexer.ingest.ingestor import IngestStats
from indexer.paths import StatePaths
from summarizer.common import tokens
from summarizer.daemon import service
from summarizer.daemon.service import Daemon


def test_a_compaction_requested_during_a_bulk_catch_up_waits_without_the_tokenizer(
    tmp_path: Path,
) -> None:
    with ExitStack() as stack:
        daemon, j = jobs_beside_a_writer(tmp_path / "state", stack)
        poll(lambda: j.runs == 1 and not j._running)
        j.request("pre_compact")
        poll(lambda: j.runs == 2 and not j._running)  # a triggered run keeps the tokenizer
        assert tokens._COUNTERS

        daemon.catching_up.set()
        j.request("pre_compact")
        poll(lambda: j.deferred == 1)
        # Waiting: no run, and the tokenizer of the earlier run is not kept meanwhile.
        assert j.runs == 2 and not tokens._COUNTERS
        daemon.catching_up.clear()
        poll(lambda: j.runs == 3 and not j._running)


def test_the_daemon_marks_a_bulk_catch_up_and_runs_listeners_with_a_small_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = StatePaths(tmp_path / "state")
    spool(paths.root, [prompt(f"bulk prompt {i} " + "x" * 200) for i in range(20)])
    backlog = sum(p.stat().st_size for p in paths.spool.glob("*.jsonl"))
    monkeypatch.setattr(service, "BULK_BACKLOG_BYTES", backlog)
    monkeypatch.setattr(service, "LARGE_PASS_LINES", 10)
    daemon = Daemon(paths, Config())
    seen: list[tuple[int, bool, int]] = []

    def listener(stats: IngestStats) -> None:
        assert daemon.writer is not None
        cache = daemon.writer.conn.execute("PRAGMA cache_size").fetchone()[0]
        seen.append((stats.lines, daemon.catching_up.is_set(), cache))

    def on_start(d: Any) -> None:
        d.listeners.append(listener)

    thread = threading.Thread(target=daemon.run, kwargs={"on_start": on_start})
    thread.start()
    try:
        poll(lambda: seen)
        # The whole backlog in one pass, marked as a catch-up; listeners on a 2 MB cache.
        assert seen[0] == (20, True, -service.LISTENER_CACHE_KIB)
        poll(lambda: not daemon.catching_up.is_set())
        # Its end: one call with no lines (for the duties that waited), still marked, so that
        # compactions wait for them, and on the small cache too.
        assert seen[1] == (0, True, -service.LISTENER_CACHE_KIB)
        spool(paths.root, [prompt("one more")])  # a small backlog is no catch-up
        poll(lambda: len(seen) == 3)
        assert seen[2] == (1, False, -store.WRITER_CACHE_KIB)
        with daemon.index_lock:
            assert daemon.writer is not None
            cache = daemon.writer.conn.execute("PRAGMA cache_size").fetchone()[0]
        assert cache == -store.WRITER_CACHE_KIB  # restored after the listeners
    finally:
        daemon.request_stop()
        thread.join(timeout=30)
    assert not thread.is_alive()
