"""The compaction's batch listener reads a long range in windows and counts and requests exactly
what one read of the whole range does."""

from __future__ import annotations

from pathlib import Path

import pytest
from daemon_helpers import HOOKS, indexed_corpus

from indexer.config import Config
from indexer.ingest.ingestor import IngestStats
from indexer.paths import StatePaths
from indexer.writer.catch_up import open_writer, writer_lock
from summarizer.daemon import jobs
from summarizer.daemon.jobs import CompactionJobs
from summarizer.daemon.service import Daemon

pytestmark = pytest.mark.skipif(not HOOKS.is_dir(), reason="needs the hook corpus")


def counted(paths: StatePaths, window: int, monkeypatch: pytest.MonkeyPatch) -> tuple[object, ...]:
    """What on_batch remembers after seeing the whole index at once (no scheduler: a request
    only records its reason)."""
    monkeypatch.setattr(jobs, "BATCH_WINDOW", window)
    daemon = Daemon(paths, Config())
    with writer_lock(paths):
        daemon.writer = open_writer(paths, daemon.config)
        try:
            j = CompactionJobs(daemon)
            j.on_batch(IngestStats())
            return j._seen_id, j._completions, sorted(j._reasons), list(j._counted)
        finally:
            daemon.writer.conn.close()


def test_windows_count_and_request_what_one_read_of_the_whole_range_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = indexed_corpus(tmp_path / "state")
    whole = counted(paths, 10_000_000, monkeypatch)
    seen_id, _completions, reasons, keys = whole
    assert isinstance(seen_id, int) and seen_id > 5000
    assert "completions" in reasons and "pre_compact" in reasons  # type: ignore[operator]
    assert len(keys) > 10  # type: ignore[arg-type]
    assert counted(paths, 7, monkeypatch) == whole
