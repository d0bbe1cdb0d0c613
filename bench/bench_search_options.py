"""What the search index costs ingest per document, for FTS5 options, in CPU time.

Indexes N corpus-shaped events (bench_ingest's spool) without the search trigger, once. Then,
for each variant, on a copy of that index: an empty copy of `entries` with the variant's
search table and trigger, filled from the stored entries in transactions of 2,000 rows as
ingest commits them. The CPU time of this process (SQLite runs in it) is measured, not the
wall time, so other work on the machine moves the figures little; rounds are interleaved.
The cost of a variant is its time minus the `none` variant's (the same copy, no search).

    python bench/bench_search_options.py [--events 200000] [--rounds 2] [VARIANT ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_ingest import build_spool  # noqa: E402

from indexer.config import Config  # noqa: E402
from indexer.index import store  # noqa: E402
from indexer.ingest.ingestor import Ingestor  # noqa: E402
from indexer.paths import StatePaths  # noqa: E402
from indexer.search import sql as si  # noqa: E402

BATCH = 2000
COLUMNS = "body, tags, kind UNINDEXED, session_id UNINDEXED, agent_id UNINDEXED, ts_ns UNINDEXED"
TOKENIZE = "tokenize='unicode61 remove_diacritics 2'"


def _trigger(body: str = si._BODY_SQL) -> str:
    return (
        f"CREATE TRIGGER copy_ai AFTER INSERT ON copy WHEN new.event IN ({si._EVENTS_SQL}) BEGIN"
        " INSERT INTO search(rowid, body, tags, kind, session_id, agent_id, ts_ns) VALUES"
        f" (new.id, {body}, {si._TAGS_SQL}, {si._KIND_SQL}, new.session_id, new.agent_id,"
        " new.ts_ns); END"
    )


def _fts(options: str = "") -> str:
    return f"CREATE VIRTUAL TABLE search USING fts5({COLUMNS}, {TOKENIZE}{options})"


def _config(key: str, value: int) -> str:
    return f"INSERT INTO search(search, rank) VALUES ('{key}', {value})"


# A variant whose last statement is BATCHED indexes each batch in one statement after it is
# copied (what ctxd does); the others index row by row in a trigger.
BATCHED = "-- batched"
VARIANTS: dict[str, list[str]] = {
    "none": [],
    "shipped (batched)": [_fts(), BATCHED],
    "per-row trigger": [_fts(), _trigger()],
    "columnsize=0": [_fts(", columnsize=0"), _trigger()],
    "detail=column": [_fts(", detail=column"), _trigger()],
    "detail=none": [_fts(", detail=none"), _trigger()],
    "contentless": [_fts(", content=''"), _trigger()],
    "automerge=16": [_fts(), _config("automerge", 16), _trigger()],
    "automerge=0": [_fts(), _config("automerge", 0), _trigger()],
    "pgsz=8000": [_fts(), _config("pgsz", 8000), _trigger()],
    "body<=4000 chars": [_fts(), _trigger(f"substr({si._BODY_SQL}, 1, 4000)")],
    "empty body": [_fts(), _trigger("''")],
}


def build(root: Path, n: int) -> Path:
    """An index of n corpus-shaped events, stored without the search trigger."""
    paths = StatePaths(root)
    paths.ensure()
    build_spool(paths.spool, n)
    conn = store.connect(paths.index_db)
    conn.execute("UPDATE meta SET value='off' WHERE key='search.version'")  # store no documents
    ingestor = Ingestor(paths, Config(), conn)
    ingestor.keep_inserted = False
    ingestor.run_once()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    shutil.rmtree(paths.spool)
    return paths.index_db


def run(source: Path, copy: Path, statements: list[str]) -> tuple[float, int]:
    """CPU seconds to insert every entry into a copy with the variant; the documents."""
    shutil.copyfile(source, copy)
    conn = sqlite3.connect(copy, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        for trigger in ("search_entry_ai", "search_entry_ad", "search_entry_au", "search_mem_ad"):
            conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        conn.execute("DROP TABLE IF EXISTS search")
        conn.execute("CREATE TABLE copy AS SELECT * FROM entries WHERE 0")
        batched = statements[-1:] == [BATCHED]
        for statement in statements[: len(statements) - batched]:
            conn.execute(statement)
        index = si.BACKFILL_ENTRIES.replace("FROM entries AS new", "FROM copy AS new")
        top = conn.execute("SELECT coalesce(max(id), 0) FROM entries").fetchone()[0]
        t0 = time.process_time()
        for low in range(1, top + 1, BATCH):
            conn.execute("BEGIN")
            conn.execute(
                "INSERT INTO copy SELECT * FROM entries WHERE id BETWEEN ? AND ?",
                (low, low + BATCH - 1),
            )
            if batched:
                conn.execute(index + " AND new.id >= ?", (low,))
            conn.execute("COMMIT")
        seconds = time.process_time() - t0
        docs = conn.execute(
            f"SELECT count(*) FROM entries WHERE event IN ({si._EVENTS_SQL})"
        ).fetchone()[0]
    finally:
        conn.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{copy}{suffix}").unlink(missing_ok=True)
    return seconds, int(docs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("variants", nargs="*", help=f"default: all of {', '.join(VARIANTS)}")
    args = parser.parse_args()
    names = ["none", *[v for v in args.variants or VARIANTS if v != "none"]]
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant {unknown[0]!r}; use one of {', '.join(VARIANTS)}")
    with tempfile.TemporaryDirectory() as tmp:
        source = build(Path(tmp) / "state", args.events)
        seconds: dict[str, list[float]] = {name: [] for name in names}
        docs = 0
        for _ in range(args.rounds):
            for name in names:
                s, docs = run(source, Path(tmp) / "copy.db", VARIANTS[name])
                seconds[name].append(s)
        size = os.path.getsize(source) / 1e6
    base = statistics.median(seconds["none"])
    print(f"{args.events:,} events, {docs:,} search documents, index {size:.0f} MB without search")
    for name in names:
        s = statistics.median(seconds[name])
        print(
            f"  {name:<18} {s:6.2f} s CPU  search cost {1e6 * (s - base) / max(docs, 1):5.1f}"
            f" µs/document  (median of {args.rounds})"
        )


if __name__ == "__main__":
    main()
