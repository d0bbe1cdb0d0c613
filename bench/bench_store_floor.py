"""The floor of ingest: what storing alone costs, against bare decode and the full pass.

Ingests a corpus-shaped spool once (bench_ingest's spool, shipped config, with views), reads the
stored entry rows back, and inserts those same rows, already built, into a fresh index with the
real schema (its indexes, and its search index filled by the one statement ingest runs per
batch) by `executemany` in batches of 2,000, one transaction each. That is the least any ingest
that keeps this index can spend per event, before decoding, redaction, attribution or views.
Also without the search index, and without the secondary indexes, interleaved, to show what
each part of the schema costs.

    python bench/bench_store_floor.py [--events 200000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_ingest import bare_decode, build_spool, run_pass  # noqa: E402

from indexer.index import store  # noqa: E402
from indexer.paths import StatePaths  # noqa: E402
from indexer.search import index as search_index  # noqa: E402

COLUMNS = (
    "file_id, offset, line_no, ts_ns, pid, tool_key, session_id, hook_event, event, agent_id,"
    " agent_type, cc_agent_id, tool_name, tool_use_id, description, instruction,"
    " output_summary, error, files, text, cwd, detail"
)
BATCH = 2000
VARIANTS = ("as shipped", "no search index", "no search, no secondary index")


def insert_rows(db: Path, rows: list[tuple[object, ...]], variant: str) -> float:
    """Seconds to insert `rows` into a fresh index at `db` shaped as `variant` says."""
    conn = store.connect(db)
    if variant != "as shipped":
        conn.execute("UPDATE meta SET value='off' WHERE key='search.version'")
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='trigger'"):
            conn.execute(f"DROP TRIGGER {name}")
    if variant == VARIANTS[2]:
        extra = conn.execute(
            "SELECT name FROM sqlite_master WHERE type='index' AND tbl_name='entries'"
            " AND sql IS NOT NULL AND name<>'entries_event'"  # the dedup key stays
        ).fetchall()
        for (name,) in extra:
            conn.execute(f"DROP INDEX {name}")
    sql = f"INSERT OR IGNORE INTO entries({COLUMNS}) VALUES ({','.join('?' * 22)})"
    t0 = time.perf_counter()
    for i in range(0, len(rows), BATCH):
        conn.execute("BEGIN")
        before = store.max_entry_id(conn)
        conn.executemany(sql, rows[i : i + BATCH])
        search_index.index_entries_after(conn, before)  # as ingest does (off: does nothing)
        conn.execute("COMMIT")
    seconds = time.perf_counter() - t0
    conn.close()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    n = args.events
    with tempfile.TemporaryDirectory() as tmp:
        paths = StatePaths(Path(tmp) / "state")
        paths.ensure()
        build_spool(paths.spool, n)
        bare_s, _ = bare_decode(paths.spool)
        pass_s, _ = run_pass(paths, n, None, worker=False)
        conn = store.connect(paths.index_db, readonly=True)
        rows = conn.execute(f"SELECT {COLUMNS} FROM entries ORDER BY id").fetchall()
        conn.close()
        assert len(rows) == n, len(rows)
        times: dict[str, list[float]] = {v: [] for v in VARIANTS}
        for r in range(args.rounds):
            for v in VARIANTS:
                times[v].append(
                    insert_rows(Path(tmp) / f"floor-{r}-{VARIANTS.index(v)}.db", rows, v)
                )
    us = {v: 1e6 * statistics.median(t) / n for v, t in times.items()}
    bare_us, pass_us = 1e6 * bare_s / n, 1e6 * pass_s / n
    print(f"{n:,} corpus-shaped events; medians of {args.rounds} interleaved rounds")
    print(f"  bare msgspec.json.decode      {bare_us:6.1f} µs/event")
    print(f"  full ingest pass, with views  {pass_us:6.1f} µs/event  ({n / pass_s:,.0f}/s)")
    for v in VARIANTS:
        print(f"  insert of built rows, {v:<30} {us[v]:6.1f} µs/event")
    floor = us["as shipped"] + bare_us
    print(
        f"  floor (insert as shipped + bare decode): {floor:.1f} µs/event, at most"
        f" {1e6 / floor:,.0f} events/s in one process; 50,000/s allows 20.0 µs,"
        f" 0.2 of bare decode allows {5 * bare_us:.1f} µs"
    )


if __name__ == "__main__":
    main()
