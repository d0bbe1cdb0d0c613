"""A pass over a large spool holds one batch of entries at a time: views are written per batch.

Before, a pass kept every entry it inserted (all files, all batches) to write the views at its
end: ingesting 200,000 spooled events took the daemon to ~500 MB.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path

from helpers import payload

from ctxd_hook.hook import append_line, build_line, segment_name
from indexer.config import Config, IngestConfig
from indexer.index.release import release_memory
from indexer.index.store import StoredEntry
from indexer.paths import StatePaths
from indexer.writer.catch_up import open_writer

BATCH = 10
EVENTS = 35
SESSION = "5f1c2d3e-0000-4000-8000-00000000abcd"


def test_views_are_written_per_batch_and_the_pass_keeps_no_entries(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    now = time.time_ns()
    for n in range(EVENTS):
        line = build_line(
            payload(
                session_id=SESSION,
                hook_event_name="PostToolUse",
                tool_name="Bash",
                tool_use_id=f"toolu_batch{n:03d}",
                tool_input={"command": f"echo {n}"},
                tool_response={"stdout": f"{n}\n", "stderr": ""},
            ),
            now + n,
            4242,
        )
        append_line(str(paths.spool), segment_name(now), line)
    writer = open_writer(paths, Config(ingest=IngestConfig(batch_lines=BATCH)))
    appended: list[int] = []
    append = writer.views.append

    def counting(entries: Iterable[StoredEntry]) -> int:
        batch = list(entries)
        appended.append(len(batch))
        return append(batch)

    writer.views.append = counting  # type: ignore[method-assign]
    try:
        writer.start()
        stats = writer.pass_once()
        release_memory(writer.conn)  # and the connection still works after it
        assert writer.conn.execute("SELECT count(*) FROM entries").fetchone()[0] == EVENTS
    finally:
        writer.close()
    assert stats.entries == EVENTS and stats.inserted == []
    assert sum(appended) == EVENTS
    assert max(appended) <= BATCH, appended  # never the whole pass at once
    view = paths.sessions / SESSION / "main.jsonl"
    seqs = [json.loads(line)["seq"] for line in view.read_text().splitlines()]
    assert seqs == list(range(1, EVENTS + 1))
