"""Ingest goes on while a compaction is in the part of its run that does not write the index."""

from __future__ import annotations

import threading
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from helpers import poll
from memory_helpers import jobs_beside_a_writer, prompt, spool

from indexer import store
from summarizer.daemon import jobs


def test_an_ingest_pass_completes_while_a_compaction_runs_its_after_compaction_hooks(
    tmp_path: Path,
) -> None:
    entered, release = threading.Event(), threading.Event()
    seen: list[int] = []

    def held(conn: Any, *_: Any) -> None:
        # The hooks read the index and tokenize (the resume states); held here by an event.
        seen.append(store.max_entry_id(conn))
        entered.set()
        release.wait(30)

    jobs.AFTER_COMPACTION.append(held)
    try:
        with ExitStack() as stack:
            _run(tmp_path, stack, entered, release, seen)
    finally:
        jobs.AFTER_COMPACTION.remove(held)


def _run(
    tmp_path: Path,
    stack: ExitStack,
    entered: threading.Event,
    release: threading.Event,
    seen: list[int],
) -> None:
    daemon, started = jobs_beside_a_writer(tmp_path / "state", stack)
    stack.callback(release.set)  # first thing on the way out: the run can end
    assert entered.wait(10)  # the startup run is inside its hooks now
    spool(daemon.paths.root, [prompt("Always run the linter.")])
    passed = threading.Event()

    def ingest() -> None:
        with daemon.index_lock:  # as the daemon's ingest loop takes it for each pass
            daemon.writer.pass_once()
        passed.set()

    threading.Thread(target=ingest, daemon=True).start()
    # The pass does not wait for the held hook: it completes and its entry is indexed.
    poll(passed.is_set)
    reader = store.connect(daemon.paths.index_db, readonly=True)
    stack.callback(reader.close)
    assert store.max_entry_id(reader) == seen[0] + 1
    assert not release.is_set() and started.runs == 0  # the compaction is still held
    release.set()
    poll(lambda: started.runs == 1 and not started._running)
    # The run published what it compacted; the new entry waits for the next run.
    assert store.get_meta(reader, "mem.published") == str(seen[0])
    started.request("request")
    poll(lambda: store.get_meta(reader, "mem.published") == str(seen[0] + 1))
