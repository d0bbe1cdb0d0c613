"""A pass asked to stop ends after the batch it is in; the next pass goes on exactly once."""

from __future__ import annotations

from pathlib import Path

from helpers import payload, query

from ctxd_hook.hook import build_line
from indexer.config import Config, IngestConfig
from indexer.paths import StatePaths
from indexer.writer.catch_up import open_writer, writer_lock

LINES = 40
BATCH = 5


def _line(n: int) -> bytes:
    event = payload(hook_event_name="UserPromptSubmit", prompt=f"prompt number {n}")
    return build_line(event, 1_600_000_000 + n, 7)


def _prompts(paths: StatePaths) -> list[str]:
    return [r[0] for r in query(paths.root, "SELECT text FROM entries ORDER BY id")]


def test_a_pass_told_to_stop_ends_after_its_batch_and_the_next_goes_on(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    for hour in ("20200101T00", "20200101T01"):  # two complete segments
        (paths.spool / f"{hour}.jsonl").write_bytes(b"".join(_line(n) for n in range(LINES)))
    config = Config(ingest=IngestConfig(batch_lines=BATCH))
    batches: list[int] = []
    with writer_lock(paths):
        writer = open_writer(paths, config)
        try:
            writer.start()
            writer.ingestor.on_batch = lambda stats: batches.append(stats.lines)
            writer.ingestor.should_stop = lambda: len(batches) >= 2
            first = writer.ingestor.run_once()
            assert (first.lines, batches) == (2 * BATCH, [BATCH, BATCH])
            writer.ingestor.should_stop = None
            rest = writer.ingestor.run_once()
        finally:
            writer.close()
    assert first.lines + rest.lines == 2 * LINES
    # Both segments hold the same events (same ids): stored once, in spool order.
    assert _prompts(paths) == [f"prompt number {n}" for n in range(LINES)]

