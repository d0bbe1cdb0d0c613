"""summarizer/memory/compact.py: compaction in process, the request to a daemon, hooks."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from memory_helpers import emit_payload, spool

from indexer.config import Config
from indexer.daemon import protocol as daemon_channel
from indexer.index import store
from indexer.models import Entry
from indexer.paths import StatePaths
from summarizer.memory.compact import (
    CompactionTimeout,
    compact_now,
    published_watermark,
    request_compaction,
    run_after_compaction,
)

# A child that takes daemon.lock as the daemon does and keeps it (but never indexes nor compacts).
_HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def silent_daemon(paths: StatePaths) -> Iterator[None]:
    """A daemon's socket that accepts connections (the kernel queues them) but never answers:
    a daemon that is busy or stuck."""
    listener = daemon_channel.listen(paths.root)
    try:
        yield
    finally:
        daemon_channel.close_listener(paths.root, listener)


@pytest.fixture
def paths(tmp_path: Path) -> StatePaths:
    p = StatePaths(tmp_path / "state")
    p.ensure()
    return p


@pytest.fixture
def holder(paths: StatePaths) -> Iterator[None]:
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(paths.lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdout is not None and child.stdout.readline() == "held\n"
        yield
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=30)


def _decide(paths: StatePaths) -> None:
    spool(
        paths.root,
        [
            emit_payload({"kind": "decision", "decision": "Use SQLite in WAL mode"}),
            emit_payload({"kind": "failure", "description": "Deploy broke", "prevention": "Pin"}),
        ],
    )


def _meta(paths: StatePaths, key: str) -> str:
    conn = store.connect(paths.index_db, readonly=True)
    try:
        return store.get_meta(conn, key)
    finally:
        conn.close()


def test_without_a_daemon_it_indexes_compacts_and_publishes(paths: StatePaths) -> None:
    _decide(paths)
    result = compact_now(paths, Config(), trigger="manual")
    assert result.by_daemon is False
    assert (result.new_decisions, result.new_failures) == (1, 1)
    assert result.watermark == 2  # both explicit events are entries 1 and 2
    assert result.published is not None
    assert _meta(paths, "mem.published") == "2"
    assert _meta(paths, "last_compaction_trigger") == "manual"
    assert _meta(paths, "last_compaction").startswith("20")
    decisions = (paths.context / "key-decisions.json").read_text()
    assert "Use SQLite in WAL mode" in decisions
    assert "Deploy broke" in (paths.context / "failure-memory.json").read_text()
    json.loads((paths.context / "running-summary.json").read_text())
    again = compact_now(paths, Config(), trigger="scheduled")
    assert (again.by_daemon, again.new_decisions, again.new_failures) == (False, 0, 0)
    assert again.watermark == 2
    assert _meta(paths, "last_compaction_trigger") == "scheduled"


def test_a_compaction_here_calls_the_callbacks_it_is_given_once_published(
    paths: StatePaths,
) -> None:
    _decide(paths)
    seen: list[tuple[str, str, str]] = []

    def after(conn: sqlite3.Connection, p: StatePaths, c: Config) -> None:
        published = store.get_meta(conn, "mem.published")
        seen.append((published, p.root.name, c.summarizer.encoding))

    config = Config()
    compact_now(paths, config, trigger="manual", after=[after])
    assert seen == [("2", "state", config.summarizer.encoding)]
    compact_now(paths, config, trigger="manual")  # none given: none called
    assert len(seen) == 1


def test_published_watermark_defaults_to_zero(tmp_path: Path) -> None:
    conn = store.connect(tmp_path / "index.db")
    try:
        assert published_watermark(conn) == 0
        store.set_meta(conn, "mem.published", "17")
        assert published_watermark(conn) == 17
    finally:
        conn.close()


def test_a_request_without_an_index_has_nothing_to_wait_for(paths: StatePaths) -> None:
    result = request_compaction(paths, timeout_s=0.0)
    assert result is not None and (result.by_daemon, result.watermark) == (True, 0)


def test_a_request_when_already_published_asks_no_daemon(paths: StatePaths) -> None:
    _decide(paths)
    compact_now(paths, Config(), trigger="manual")
    result = request_compaction(paths, timeout_s=0.0)  # no daemon runs: nothing was asked
    assert result is not None and (result.by_daemon, result.watermark) == (True, 2)


def test_a_request_with_no_daemon_listening_is_none(paths: StatePaths) -> None:
    _one_entry(paths)
    assert request_compaction(paths, timeout_s=0.0) is None


def test_a_daemon_that_does_not_publish_times_out_with_a_clear_message(
    paths: StatePaths, silent_daemon: None
) -> None:
    _one_entry(paths)  # indexed (as a daemon would index it) and never compacted
    with pytest.raises(CompactionTimeout, match=r"index at entry 1, context files at 0"):
        request_compaction(paths, timeout_s=0.0)


def test_compact_now_times_out_when_the_daemon_does_not_index(
    paths: StatePaths, silent_daemon: None
) -> None:
    _decide(paths)
    with pytest.raises(CompactionTimeout, match="did not index the spool"):
        compact_now(paths, Config(), trigger="manual", wait_s=0.0)


def test_a_lock_holder_that_is_no_daemon_and_never_lets_go_times_out(
    paths: StatePaths, holder: None
) -> None:
    _decide(paths)
    with pytest.raises(CompactionTimeout, match="kept the index locked"):
        compact_now(paths, Config(), trigger="manual", wait_s=0.0)
    assert not (paths.root / "compact.request").exists()  # no daemon was asked


def _one_entry(paths: StatePaths) -> None:
    conn = store.connect(paths.index_db)
    try:
        entry = Entry(file_id=1, offset=0, line_no=1, ts_ns=1, pid=1, session_id="s",
                      hook_event="Stop", event="stop")  # fmt: skip
        store.insert_entries(conn, [entry])
    finally:
        conn.close()


def test_a_failing_callback_does_not_stop_the_others(
    paths: StatePaths, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []

    def bad(conn: sqlite3.Connection, p: StatePaths, c: Config) -> None:
        calls.append("bad")
        raise RuntimeError("hook broke")

    def good(conn: sqlite3.Connection, p: StatePaths, c: Config) -> None:
        calls.append(f"good:{p.root.name}")

    conn = store.connect(paths.index_db)
    try:
        run_after_compaction(conn, paths, Config(), [bad, good])
    finally:
        conn.close()
    assert calls == ["bad", "good:state"]
    assert "failed" in caplog.text
