"""Choosing candidates to re-rank: among equally relevant documents the newest are kept."""

from __future__ import annotations

import time
from pathlib import Path

from memory_helpers import prompt, replay

from indexer.index import store
from indexer.search import query as search_query
from summarizer.search.query import to_match


def test_equally_relevant_documents_beyond_the_candidates_leave_the_oldest_out(
    tmp_path: Path,
) -> None:
    paths = replay(tmp_path, [prompt("osprey over the estuary") for _ in range(6)])
    conn = store.connect(paths.index_db, readonly=True)
    try:
        docs = [r[0] for r in conn.execute("SELECT rowid FROM search ORDER BY rowid")]
        hits = search_query.query(
            conn, to_match("osprey"), now_ns=time.time_ns(), half_life_h=168, limit=2,
            candidates=2,
        )  # fmt: skip
    finally:
        conn.close()
    assert len(docs) == 6
    assert [h.doc for h in hits] == docs[::-1][:2]
