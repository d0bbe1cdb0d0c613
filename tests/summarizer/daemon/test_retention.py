"""Retention: only fully indexed, old spool segments go; optional index pruning by age."""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from pathlib import Path

from ctxd_hook import hook
from indexer.config import Config, RetentionConfig
from indexer.index import store
from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up, writer_lock
from summarizer.daemon.retention import prune_index, prune_spool, run_retention

HOUR_NS = 3600 * 1_000_000_000
_SEQ = itertools.count(1)


def _line(state: Path, ts_ns: int, session: str, event: str = "Stop") -> Path:
    spool = state / "spool"
    spool.mkdir(parents=True, exist_ok=True)
    payload = json.dumps({"session_id": session, "hook_event_name": event, "cwd": "/p"}).encode()
    # (ts_ns, pid) identifies a hook invocation (the index dedupes on it): keep them distinct.
    line = hook.build_line(payload, ts_ns + next(_SEQ), 7)
    hook.append_line(str(spool), hook.segment_name(ts_ns), line)
    return spool / hook.segment_name(ts_ns)


def _age(path: Path, hours: float) -> None:
    t = time.time() - hours * 3600
    os.utime(path, (t, t))


def test_only_old_and_fully_indexed_segments_are_deleted(tmp_path: Path) -> None:
    state = tmp_path / "state"
    paths = StatePaths(state)
    now = time.time_ns()
    old_done = _line(state, now - 100 * HOUR_NS, "s-old")
    old_partial = _line(state, now - 90 * HOUR_NS, "s-old2")
    recent = _line(state, now - 2 * HOUR_NS, "s-new")
    catch_up(paths)
    # Appended after indexing (a late hook): not indexed yet, so it must stay.
    _line(state, now - 90 * HOUR_NS, "s-late")
    never = state / "spool" / "20200101T00.jsonl"
    never.write_bytes(b'{"ctxd":1,"ts_ns":1,"pid":1,"event":{"session_id":"x"}}\n')
    for path, hours in ((old_done, 100), (old_partial, 90), (recent, 2), (never, 200)):
        _age(path, hours)
    with writer_lock(paths):
        conn = store.connect(paths.index_db)
        try:
            report = prune_spool(conn, paths, spool_hours=72)
        finally:
            conn.close()
    assert report.segments_deleted == [old_done.name]
    assert sorted(report.segments_kept_unindexed) == sorted([old_partial.name, never.name])
    assert not old_done.exists() and old_partial.exists() and recent.exists() and never.exists()
    # The index still has every entry, and the next pass just retires the deleted file.
    result = catch_up(paths)
    assert result.stats.anomalies == 0
    conn = store.connect(paths.index_db, readonly=True)
    try:
        sessions = {r[0] for r in conn.execute("SELECT session_id FROM entries")}
    finally:
        conn.close()
    assert {"s-old", "s-old2", "s-new", "s-late"} <= sessions


def test_hook_appending_during_retention_never_loses_a_line(tmp_path: Path) -> None:
    """A hook that opened the segment just before it is deleted reopens a fresh one."""
    state = tmp_path / "state"
    paths = StatePaths(state)
    now = time.time_ns()
    seg = _line(state, now - 100 * HOUR_NS, "s1")
    catch_up(paths)
    _age(seg, 100)
    written: list[int] = []

    def writer() -> None:
        for n in range(1, 151):
            _line(state, now - 100 * HOUR_NS, f"w{n}")
            written.append(n)
            time.sleep(0.01)

    t = threading.Thread(target=writer)
    t.start()
    deleted = 0
    while t.is_alive():
        catch_up(paths)
        if seg.exists():
            _age(seg, 100)
        with writer_lock(paths):
            conn = store.connect(paths.index_db)
            try:
                deleted += len(prune_spool(conn, paths, spool_hours=72).segments_deleted)
            finally:
                conn.close()
    t.join()
    assert deleted >= 1
    catch_up(paths)
    conn = store.connect(paths.index_db, readonly=True)
    try:
        got = {r[0] for r in conn.execute("SELECT session_id FROM entries")}
    finally:
        conn.close()
    assert {f"w{n}" for n in written} <= got


def test_index_pruning_by_age(tmp_path: Path) -> None:
    state = tmp_path / "state"
    paths = StatePaths(state)
    now = time.time_ns()
    _line(state, now - 24 * 40 * HOUR_NS, "ancient")
    _line(state, now - 24 * 40 * HOUR_NS, "mixed")
    _line(state, now - HOUR_NS, "mixed", "SessionEnd")
    _line(state, now - HOUR_NS, "fresh")
    catch_up(paths)
    (paths.sessions / "ancient").mkdir(parents=True, exist_ok=True)
    (paths.resume / "ancient").mkdir(parents=True)
    with writer_lock(paths):
        conn = store.connect(paths.index_db)
        try:
            assert prune_index(conn, paths, index_days=0) == (0, 0)
            assert prune_index(conn, paths, index_days=30) == (2, 1)
            left = {r[0] for r in conn.execute("SELECT session_id FROM sessions")}
            count = store.count(conn, "entries")
        finally:
            conn.close()
    assert left == {"mixed", "fresh"} and count == 2
    assert not (paths.sessions / "ancient").exists() and not (paths.resume / "ancient").exists()


def test_run_retention_uses_the_config(tmp_path: Path) -> None:
    state = tmp_path / "state"
    paths = StatePaths(state)
    seg = _line(state, time.time_ns() - 10 * HOUR_NS, "s")
    catch_up(paths)
    _age(seg, 10)
    config = Config(retention=RetentionConfig(spool_hours=5.0))
    with writer_lock(paths):
        conn = store.connect(paths.index_db)
        try:
            report = run_retention(conn, paths, config)
        finally:
            conn.close()
    assert report.segments_deleted == [seg.name] and report.entries_deleted == 0
