"""The search index's segments: compaction merges them into one, search finds the same hits."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from memory_helpers import prompt, replay

from indexer.config import load_config
from indexer.index import store
from indexer.paths import StatePaths
from indexer.search import index as search_index
from indexer.search import merge as search_merge
from summarizer.memory.compact import compact_now
from summarizer.search.service import Filters, search


def _grown(tmp_path: Path, passes: int = 7) -> StatePaths:
    """An index that took its events in `passes` catch-ups (one transaction, one segment each)."""
    paths = StatePaths(tmp_path)
    for i in range(passes):
        paths = replay(tmp_path, [prompt(f"heron sighting {i} by the weir"), prompt(f"pass {i}")])
    return paths


def _hits(paths: StatePaths) -> list[tuple[str, str, str]]:
    conn = store.connect(paths.index_db, readonly=True)
    try:
        found = search(conn, "heron weir", Filters(kinds=("prompt",), limit=100), now_ns=0)
        return [(h.session_id, h.time, h.snippet) for h in found]
    finally:
        conn.close()


def _segments(paths: StatePaths) -> int:
    conn = store.connect(paths.index_db, readonly=True)
    try:
        return search_merge.segment_count(conn)
    finally:
        conn.close()


def test_compaction_leaves_the_search_index_in_one_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = _grown(tmp_path)
    assert _segments(paths) > 1
    monkeypatch.setattr(search_merge, "MERGE_ABOVE", 1)  # a small index never reaches 8
    before = _hits(paths)
    assert len(before) == 7
    compact_now(paths, load_config(paths.config), trigger="test")
    assert _segments(paths) == 1
    assert _hits(paths) == before


def test_compaction_leaves_a_few_segments_alone(tmp_path: Path) -> None:
    # Merging into one rewrites the whole index: only worth it once segments pile up.
    paths = _grown(tmp_path, passes=3)
    segments = _segments(paths)
    assert 1 < segments <= search_merge.MERGE_ABOVE
    compact_now(paths, load_config(paths.config), trigger="test")
    assert _segments(paths) == segments


def test_merging_stops_when_asked_and_when_done(tmp_path: Path) -> None:
    paths = _grown(tmp_path, passes=3)
    conn = store.connect(paths.index_db)
    try:
        segments = search_merge.segment_count(conn)
        assert segments > 1
        assert search_merge.merge_some(conn, should_stop=lambda: True) == 0
        assert search_merge.segment_count(conn) == segments
        assert search_index.merge_segments(conn) == 0  # not enough segments to be worth it
        assert search_merge.merge_some(conn) >= 1
        assert search_merge.segment_count(conn) == 1
        assert search_merge.merge_some(conn) == 0  # nothing left to merge
    finally:
        conn.close()


def test_an_index_without_search_counts_no_segments(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "old.db")
    try:
        conn.execute("CREATE TABLE entries(id INTEGER PRIMARY KEY)")
        assert search_merge.segment_count(conn) == 0
        assert search_merge.merge_some(conn) == 0
    finally:
        conn.close()
