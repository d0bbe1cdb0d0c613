"""A daemon told to stop in the middle of a long catch-up stops within a batch, losing nothing."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from helpers import payload, poll, query

from ctxd_hook.hook import build_line
from indexer.config import Config, IngestConfig
from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up
from summarizer.daemon.service import Daemon

LINES = 40
BATCH = 5


def _line(n: int) -> bytes:
    event = payload(hook_event_name="UserPromptSubmit", prompt=f"prompt number {n}")
    return build_line(event, 1_600_000_000 + n, 7)


def _prompts(paths: StatePaths) -> list[str]:
    return [r[0] for r in query(paths.root, "SELECT text FROM entries ORDER BY id")]


def test_a_daemon_told_to_stop_during_a_catch_up_stops_within_a_batch(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    (paths.spool / "20200101T00.jsonl").write_bytes(b"".join(_line(n) for n in range(LINES)))
    config = Config(ingest=IngestConfig(batch_lines=BATCH))
    daemon = Daemon(paths, config)
    batches: list[int] = []

    def on_start(d: Any) -> None:
        def stop_at_first_batch(stats: Any) -> None:
            batches.append(stats.lines)
            d.request_stop()

        d.writer.ingestor.on_batch = _chain(d.writer.ingestor.on_batch, stop_at_first_batch)

    thread = threading.Thread(target=daemon.run, kwargs={"on_start": on_start})
    thread.start()
    try:
        poll(lambda: batches)
    finally:
        thread.join(timeout=60)
    assert not thread.is_alive()
    assert 0 < len(_prompts(paths)) < LINES  # stopped inside the pass, its batches committed
    catch_up(paths, config)
    assert _prompts(paths) == [f"prompt number {n}" for n in range(LINES)]


def _chain(first: Any, second: Any) -> Any:
    def both(stats: Any) -> None:
        if first is not None:
            first(stats)
        second(stats)

    return both
