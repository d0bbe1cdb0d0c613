"""Ingest goes on while a compaction is in the part of its run that does not write the index."""

from __future__ import annotations

import threading
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from helpers import poll
from memory_helpers import jobs_beside_a_writer, prompt, spool

from indexer.index import store
from indexer.index.transactions import transaction
from indexer.retention import purge
from summarizer.memory import store as memory_store
from summarizer.memory.reader import load_memory


def test_an_ingest_pass_completes_while_a_compaction_runs_its_after_compaction_callbacks(
    tmp_path: Path,
) -> None:
    entered, release = threading.Event(), threading.Event()
    seen: list[int] = []

    def held(conn: Any, *_: Any) -> None:
        # The callbacks read the index and tokenize (the resume states); held here by an event.
        seen.append(store.max_entry_id(conn))
        entered.set()
        release.wait(30)

    with ExitStack() as stack:
        _run(tmp_path, stack, held, entered, release, seen)


def _run(
    tmp_path: Path,
    stack: ExitStack,
    held: Any,
    entered: threading.Event,
    release: threading.Event,
    seen: list[int],
) -> None:
    daemon, started = jobs_beside_a_writer(tmp_path / "state", stack, held)
    stack.callback(release.set)  # first thing on the way out: the run can end
    assert entered.wait(10)  # the startup run is inside its callbacks now
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


class _Held:
    """Wraps a function so that its first call waits for `release` (after setting `entered`)."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.entered, self.release = threading.Event(), threading.Event()

    def __call__(self, *args: Any) -> Any:
        if not self.entered.is_set():
            self.entered.set()
            self.release.wait(30)
        return self.fn(*args)


def _beside_a_writer(tmp_path: Path, stack: ExitStack, held: _Held) -> tuple[Any, Any, Any]:
    daemon, started = jobs_beside_a_writer(tmp_path / "state", stack)
    stack.callback(held.release.set)  # first thing on the way out: the run can end
    assert held.entered.wait(10)  # the startup run is extracting its first entry now
    reader = store.connect(daemon.paths.index_db, readonly=True)
    stack.callback(reader.close)
    return daemon, started, reader


def _in_a_thread(daemon: Any, work: Any) -> threading.Event:
    """Run `work(writer_conn)` under the index lock, as the ingest loop and retention do."""
    done = threading.Event()

    def run() -> None:
        with daemon.index_lock:
            work(daemon.writer.conn)
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return done


def test_an_ingest_pass_completes_while_a_compaction_extracts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = _Held(memory_store.observe)
    monkeypatch.setattr(memory_store, "observe", held)
    with ExitStack() as stack:
        daemon, started, reader = _beside_a_writer(tmp_path, stack, held)
        first = store.max_entry_id(reader)
        spool(daemon.paths.root, [prompt("Always run the linter.")])
        poll(_in_a_thread(daemon, lambda _conn: daemon.writer.pass_once()).is_set)
        assert store.max_entry_id(reader) == first + 1
        assert started.runs == 0  # the compaction is still held
        held.release.set()
        poll(lambda: started.runs == 1 and not started._running)
        # The run's next batch took the entry indexed meanwhile: exactly once, all published.
        assert store.get_meta(reader, "mem.watermark") == str(first + 1)
        assert store.get_meta(reader, "mem.published") == str(first + 1)
        assert [c.description for c in load_memory(reader).constraints] == [
            "Always run the linter.",
            "Never use tabs.",
        ]


def test_entries_deleted_while_a_compaction_extracts_them_are_not_folded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = _Held(memory_store.observe)
    monkeypatch.setattr(memory_store, "observe", held)
    with ExitStack() as stack:
        daemon, started, reader = _beside_a_writer(tmp_path, stack, held)

        def delete_all(conn: Any) -> None:  # what retention does to entries past the cutoff
            with transaction(conn):
                purge.delete_entries_before(conn, 2**62)

        poll(_in_a_thread(daemon, delete_all).is_set)
        held.release.set()
        poll(lambda: started.runs == 1 and not started._running)
        assert store.get_meta(reader, "mem.watermark", "0") == "0"
        assert load_memory(reader).constraints == []
