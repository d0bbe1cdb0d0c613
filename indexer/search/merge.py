"""Keeping the search index in few segments: bounded FTS5 merge steps after a compaction.

Every ingest transaction leaves FTS5 a new small segment; its automerge keeps a few per level,
so a grown index holds a dozen or more, and every query seeks each term in each of them (at
200,000 events, 13 segments made three-word searches ~1.7x slower than one). The daemon's
compaction, which runs when ingest has caught up, merges them toward one in steps of
MERGE_PAGES leaf pages, each its own short transaction under the caller's lock, so ingest
waits at most one step. A run does at most MAX_STEPS steps: a big merge goes on where it
stopped at the next compaction (FTS5 keeps its progress in the index).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

MERGE_PAGES = 500
MAX_STEPS = 100
# A merge into one segment rewrites the whole search index (~90 MB at 1,000,000 events), so
# it waits until this many segments have piled up: FTS5's own automerge keeps the count low
# between, and a daemon busy all day does not rewrite its index at every compaction.
MERGE_ABOVE = 8


def segment_count(conn: sqlite3.Connection) -> int:
    """How many segments the search index holds (0 when it is empty or missing)."""
    try:
        return int(conn.execute("SELECT count(DISTINCT segid) FROM search_idx").fetchone()[0])
    except sqlite3.OperationalError:  # an index without search (an older ctxd's, read-only)
        return 0


def merge_some(
    conn: sqlite3.Connection,
    *,
    lock: AbstractContextManager[Any] | None = None,
    should_stop: Callable[[], bool] | None = None,
    max_steps: int = MAX_STEPS,
    above: int = 1,
) -> int:
    """Merge the search index's segments toward one, in at most `max_steps` bounded steps.

    Only an index of more than `above` segments is merged. The caller holds the writer flock
    (I8); `lock` is taken around each step. Returns the steps that merged something (0 when
    there was nothing to merge).
    """
    if segment_count(conn) <= max(1, above):
        return 0
    guard = lock if lock is not None else contextlib.nullcontext()
    done = 0
    for _ in range(max_steps):
        if should_stop is not None and should_stop():
            break
        with guard:
            before = conn.total_changes
            conn.execute("BEGIN IMMEDIATE")
            try:
                # A negative page count merges every level into one segment, not only the
                # levels that have filled up (FTS5's 'merge' command).
                conn.execute(
                    "INSERT INTO search(search, rank) VALUES ('merge', ?)", (-MERGE_PAGES,)
                )
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        if conn.total_changes - before < 2:  # FTS5's sign that there was nothing to merge
            break
        done += 1
    return done
