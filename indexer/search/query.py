"""Search queries: the best documents for an FTS5 expression, by bm25 and recency."""

from __future__ import annotations

import heapq
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from indexer.search.index import hex_tag
from indexer.search.sql import MEMORY_KINDS

__all__ = ["Hit", "query", "stored_bodies"]


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result, as stored (already redacted)."""

    doc: int
    kind: str
    session_id: str
    agent_id: str
    ts_ns: int
    snippet: str
    score: float


def query(
    conn: sqlite3.Connection,
    match: str,
    *,
    now_ns: int,
    half_life_h: float,
    limit: int,
    candidates: int,
    window: int = 1000,
    session_prefix: str | None = None,
    agent_id: str | None = None,
    kinds: Sequence[str] = (),
    since_ns: int | None = None,
    mark: tuple[str, str] = ("**", "**"),
) -> list[Hit]:
    """The best `limit` documents for an FTS5 `match` expression, by bm25 and recency.

    bm25 costs a few microseconds per matching document, so a common word over a large
    history would be slow to rank whole: only the `window` most recent matching events are
    ranked, with every matching memory item (decisions, constraints, failures). bm25 picks the
    `candidates` most relevant of those; a recent document then counts up to twice an old one.
    """
    # The user's words must be in the text; the filters narrow by tag tokens (FTS5 intersects
    # both), then the stored columns check them exactly (a hex prefix ends mid-character).
    terms = [f"body : ({match})"]
    where = ["search MATCH ?"]
    args: list[object] = []
    if session_prefix:
        terms.append(f'tags : "s{hex_tag(session_prefix)}"*')
        where.append("substr(session_id, 1, ?) = ?")
        args += [len(session_prefix), session_prefix]
    if agent_id:
        terms.append(f'tags : "a{hex_tag(agent_id)}"')
        where.append("agent_id = ?")
        args.append(agent_id)
    if kinds:
        terms.append("tags : (" + " OR ".join(f'"k{k}"' for k in kinds if k.isalnum()) + ")")
        where.append(f"kind IN ({','.join('?' * len(kinds))})")
        args += list(kinds)
    if since_ns is not None:
        where.append("ts_ns >= ?")
        args.append(since_ns)
    expression = " AND ".join(terms)
    args = [expression, *args]
    half_life_ns = max(half_life_h, 0.001) * 3600e9
    condition = " AND ".join(where)
    # Memory items have negative rowids, events positive ones in the order they came. One
    # pass walks the `window` most recent matching events newest first with their bm25 (a
    # second pass to find the window's oldest event first walked them twice); the stored
    # columns are read for the `candidates` best only.
    memory = f"SELECT rowid, rank FROM search WHERE {condition} AND rowid < 0"
    ranked: list[tuple[int, float]] = []
    # Ranking costs FTS5 ~2 ms at 1M events even when no memory item matches: look first.
    if conn.execute(memory + " LIMIT 1", args).fetchone():
        ranked = conn.execute(memory + " ORDER BY rank LIMIT ?", [*args, candidates]).fetchall()
    if not (kinds and set(kinds) <= MEMORY_KINDS):
        recent = conn.execute(
            f"SELECT rowid, rank FROM search WHERE {condition} AND rowid > 0"
            " ORDER BY rowid DESC LIMIT ?",
            [*args, window],
        ).fetchall()
        ranked += heapq.nsmallest(candidates, recent, key=lambda r: (r[1], -r[0]))
    rank_of = dict(ranked)
    rows: list[Any] = []
    for chunk in range(0, len(ranked), 500):  # under SQLite's limit on bound parameters
        docs = [doc for doc, _ in ranked[chunk : chunk + 500]]
        rows += [
            (*r, rank_of[r[0]])
            for r in conn.execute(
                "SELECT rowid, kind, session_id, agent_id, ts_ns FROM search"
                f" WHERE rowid IN ({','.join('?' * len(docs))})",
                docs,
            )
        ]

    def score(r: Any) -> float:
        # bm25 (FTS5's rank) is negative, better when lower; recency scales it by up to 2.
        age_ns = max(now_ns - int(r[4]), 0)
        return float(r[5]) * (1.0 + 1.0 / (1.0 + age_ns / half_life_ns))

    scored = sorted(rows, key=lambda r: (score(r), -r[0]))[:limit]
    if not scored:
        return []
    docs = [int(r[0]) for r in scored]
    snippets = dict(
        conn.execute(
            "SELECT rowid, snippet(search, 0, ?, ?, '…', 16) FROM search"
            f" WHERE search MATCH ? AND rowid IN ({','.join('?' * len(docs))})",
            [mark[0], mark[1], expression, *docs],
        ).fetchall()
    )
    return [
        Hit(
            int(r[0]),
            str(r[1]),
            str(r[2]),
            str(r[3]),
            int(r[4]),
            str(snippets.get(r[0], "")),
            -score(r),
        )
        for r in scored
    ]


def stored_bodies(conn: sqlite3.Connection, docs: Sequence[int]) -> dict[int, str]:
    """The searchable text of each document, as stored."""
    marks = ",".join("?" * len(docs))
    rows = conn.execute(f"SELECT rowid, body FROM search WHERE rowid IN ({marks})", list(docs))
    return {int(doc): str(body) for doc, body in rows}
