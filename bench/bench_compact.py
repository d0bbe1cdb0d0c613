"""Incremental compaction: time to compact 1,000 new events on a small vs a large index.

    python bench/bench_compact.py                 # 10,000 vs 1,000,000 indexed events
    python bench/bench_compact.py --events 200000 # a quicker run

Both indexes are generated with plain SQL inserts (bench/gen_index.py), fully compacted, then
1,000 new events are inserted and compacted, several rounds; the medians are compared. The
goal is a ratio <= 1.5: the cost follows the new events, not the history.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_index import build, insert

from indexer.config import Config
from indexer.index import store
from indexer.paths import StatePaths
from summarizer.memory.compact import compact_and_publish
from summarizer.memory.store import compact
from summarizer.resume.writer import refresh_after_compaction

# What every compaction of ctxd runs after publishing: the resume states' refresh.
AFTER = [refresh_after_compaction]


class Index:
    """One generated, fully compacted index and the timings of its increments."""

    def __init__(self, root: Path, base: int) -> None:
        self.paths = StatePaths(root)
        self.paths.ensure()
        self.base = base
        self.generate_s = build(self.paths.index_db, base)
        self.conn = store.connect(self.paths.index_db)
        started = time.perf_counter()
        compact_and_publish(self.conn, self.paths, Config(), trigger="bench", after=AFTER)
        self.base_compact_s = time.perf_counter() - started
        self.next = base
        self.fold: list[float] = []
        self.full: list[float] = []

    def increment(self, new: int, *, record: bool) -> None:
        """Insert `new` events and compact them, memory only; then again with the files."""
        insert(self.conn, self.next, new)
        self.next += new
        t = time.perf_counter()
        stats = compact(self.conn)
        fold = time.perf_counter() - t
        assert stats.entries == new, stats
        insert(self.conn, self.next, new)
        self.next += new
        t = time.perf_counter()
        result = compact_and_publish(self.conn, self.paths, Config(), trigger="bench", after=AFTER)
        full = time.perf_counter() - t
        assert result.stats.entries == new
        if record:
            self.fold.append(fold)
            self.full.append(full)

    def sizes(self) -> tuple[int, int]:
        d = self.conn.execute("SELECT count(*) FROM mem_decisions").fetchone()[0]
        f = self.conn.execute("SELECT count(*) FROM mem_failures").fetchone()[0]
        return int(d), int(f)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="large index size")
    parser.add_argument("--small", type=int, default=10_000, help="small index size")
    parser.add_argument("--new", type=int, default=1_000, help="new events per compaction")
    parser.add_argument("--rounds", type=int, default=5, help="increments measured (median)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        indexes = {}
        for label, base in (("small", args.small), ("large", args.events)):
            print(f"building and compacting {base:,} events …", flush=True)
            idx = indexes[label] = Index(Path(tmp) / label, base)
            d, f = idx.sizes()
            print(
                f"  generated in {idx.generate_s:.1f} s; first compaction {idx.base_compact_s:.1f} s"
                f" ({base / idx.base_compact_s:,.0f} events/s); memory: {d:,} decisions, {f:,} failures"
            )
        # Interleaved rounds, after one unrecorded warm-up each, so machine load hits both alike.
        for r in range(args.rounds + 1):
            for idx in indexes.values():
                idx.increment(args.new, record=r > 0)
        s, big = indexes["small"], indexes["large"]
        rows = [
            ("memory fold only", s.fold, big.fold),
            ("fold + context files", s.full, big.full),
        ]
        print()
        print(f"compaction of {args.new:,} new events (median of {args.rounds} rounds):")
        for name, small_t, large_t in rows:
            a, b = statistics.median(small_t) * 1000, statistics.median(large_t) * 1000
            print(f"  {name:<22} on {args.small:>9,} events: {a:8.1f} ms")
            print(f"  {name:<22} on {args.events:>9,} events: {b:8.1f} ms   ratio {b / a:.2f}")
        print("goal: ratio <= 1.5 (the cost follows the new events, not the history)")
        for idx in indexes.values():
            idx.conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
