"""get_injection() latency, in process, on a large compacted index (goal <= 50 ms).

python bench/bench_inject.py                  # 1,000,000 indexed events
python bench/bench_inject.py --events 100000  # a quicker run
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

from gen_index import build

from indexer import store
from indexer.config import Config
from indexer.paths import StatePaths
from summarizer.compact import compact_and_publish
from summarizer.inject import ContextAgent, render_injection


def timings(calls: int, fn: object) -> list[float]:
    """Milliseconds of `calls` calls of `fn` after one warm-up call."""
    assert callable(fn)
    fn()
    out = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="index size")
    parser.add_argument("--calls", type=int, default=50, help="timed calls per variant")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = StatePaths(Path(tmp) / "state")
        paths.ensure()
        print(f"building and compacting {args.events:,} events …", flush=True)
        gen_s = build(paths.index_db, args.events)
        conn = store.connect(paths.index_db)
        t = time.perf_counter()
        compact_and_publish(conn, paths, Config(), trigger="bench")
        print(f"  generated in {gen_s:.1f} s, compacted in {time.perf_counter() - t:.1f} s")
        conn.close()
        fresh = ContextAgent(state_dir=paths.root)  # checks spool lag and watermark first (I12)
        cached = ContextAgent(state_dir=paths.root, refresh=False)
        injection = fresh.get_injection("F-1", 2000)
        assert "error" not in injection, injection
        print(
            f"  injection: {injection['tokenCount']} tokens, "
            f"{len(render_injection(injection)):,} characters, {len(injection['decisions'])} "
            f"decisions, {len(injection['failures'])} failures, "
            f"{len(injection['constraints'])} constraints"
        )
        print()
        print(f"get_injection() on {args.events:,} indexed events ({args.calls} calls):")
        for label, agent in (("with freshness check", fresh), ("without (refresh=False)", cached)):
            ms = sorted(timings(args.calls, lambda a=agent: a.get_injection("F-1", 2000)))
            p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
            print(f"  {label:<24} median {statistics.median(ms):6.1f} ms   p95 {p95:6.1f} ms")
        print("goal: <= 50 ms in process")
    return 0


if __name__ == "__main__":
    sys.exit(main())
