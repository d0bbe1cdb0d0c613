"""The read-only spool checks stay right when retention deletes a segment mid-scan, and never
count a symlink planted in the spool as a segment."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import payload

from ctxd_hook.hook import build_line
from indexer.config import load_config
from indexer.paths import StatePaths
from indexer.queries.readonly import connect_readonly, index_is_current, spool_lag, spool_sizes
from indexer.writer.catch_up import catch_up

OLD = "20200101T00.jsonl"  # indexed, then deleted by retention while a reader lists the spool
NEW = "20200101T01.jsonl"  # written after the index pass: not indexed yet


def _spool(tmp_path: Path) -> StatePaths:
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    ts = time.time_ns()
    (paths.spool / OLD).write_bytes(
        build_line(payload(hook_event_name="UserPromptSubmit", prompt="old"), ts, 1)
    )
    caught = catch_up(paths, load_config(paths.config))
    assert caught.caught_up
    (paths.spool / NEW).write_bytes(
        build_line(payload(hook_event_name="UserPromptSubmit", prompt="new"), ts + 1, 1)
    )
    return paths


@pytest.fixture
def retention_mid_scan(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Once armed, os.scandir lists the indexed segment first, and that segment is deleted
    (as retention does) between the listing and the stat of its entry."""
    real_scandir = os.scandir

    class Listing:
        def __init__(self, path: Any) -> None:
            self.it = real_scandir(path)
            self.entries = sorted(self.it, key=lambda d: d.name)

        def __enter__(self) -> Iterator[os.DirEntry[str]]:
            return self._gen()

        def __exit__(self, *exc: object) -> None:
            self.it.close()

        def __iter__(self) -> Iterator[os.DirEntry[str]]:
            return self._gen()

        def _gen(self) -> Iterator[os.DirEntry[str]]:
            for d in self.entries:
                if d.name == OLD and os.path.lexists(d.path):
                    os.unlink(d.path)
                yield d

    def arm() -> None:
        monkeypatch.setattr(os, "scandir", Listing)

    return arm


def test_index_is_current_sees_the_unindexed_segment_after_a_deleted_one(
    tmp_path: Path, retention_mid_scan: Callable[[], None]
) -> None:
    paths = _spool(tmp_path)
    conn = connect_readonly(paths.index_db)
    assert conn is not None
    try:
        retention_mid_scan()
        assert not index_is_current(conn, paths.spool)
        assert not (paths.spool / OLD).exists()
    finally:
        conn.close()


@pytest.mark.parametrize("check", ["sizes", "lag"])
def test_spool_sizes_and_lag_keep_every_other_segment(
    tmp_path: Path, retention_mid_scan: Callable[[], None], check: str
) -> None:
    paths = _spool(tmp_path)
    size = (paths.spool / NEW).stat().st_size
    retention_mid_scan()
    if check == "sizes":
        assert spool_sizes(paths.spool) == {NEW: size}
    else:
        assert spool_lag(paths.spool, {OLD: 10**6}) == (size, 1)
    assert not (paths.spool / OLD).exists()


def test_a_symlink_in_the_spool_is_no_segment(tmp_path: Path) -> None:
    paths = _spool(tmp_path)
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(b"not a segment\n" * 100)
    (paths.spool / "20200101T02.jsonl").symlink_to(outside)
    caught = catch_up(paths, load_config(paths.config))
    assert caught.caught_up
    assert set(spool_sizes(paths.spool)) == {OLD, NEW}
    conn = connect_readonly(paths.index_db)
    assert conn is not None
    try:
        assert index_is_current(conn, paths.spool)  # the link holds nothing to index
    finally:
        conn.close()
