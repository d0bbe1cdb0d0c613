"""The index façade's cost per call: named queries vs the same raw SQL, interleaved in one run.

    python bench/bench_facade.py               # 50,000 calls per round, 5 rounds
    python bench/bench_facade.py --calls 10000

Each round times one façade function (which also translates sqlite3 errors) and the raw
`conn.execute` it wraps, in alternating order; the medians and their ratio are printed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ctxd_hook.hook import run
from indexer.paths import StatePaths
from indexer.queries import history, query
from indexer.writer.catch_up import catch_up

SID = "11111111-1111-4111-8111-111111111111"


def _timed(fn: Callable[[], object], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = StatePaths(Path(tmp))
        for i in range(20):
            event = '{"session_id":"%s","hook_event_name":"UserPromptSubmit","prompt":"p%d"}'
            run((event % (SID, i)).encode(), {"CTXD_HOME": tmp}, "/")
        catch_up(paths)
        conn = history.connect(paths.index_db, readonly=True)
        cases: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
            "session_exists": (
                lambda: query.session_exists(conn, SID),
                lambda: conn.execute(
                    "SELECT 1 FROM sessions WHERE session_id=?", (SID,)
                ).fetchone(),
            ),
            "last_entry": (
                lambda: query.last_entry(conn, SID),
                lambda: conn.execute(
                    "SELECT id, event FROM entries WHERE session_id=? AND event<>'session_start'"
                    " ORDER BY id DESC LIMIT 1",
                    (SID,),
                ).fetchone(),
            ),
            "max_entry_id": (
                lambda: history.max_entry_id(conn),
                lambda: conn.execute("SELECT coalesce(max(id), 0) FROM entries").fetchone(),
            ),
        }
        print(f"µs per call (median of {args.rounds} rounds of {args.calls:,} calls):")
        for name, (facade, raw) in cases.items():
            f_times, r_times = [], []
            for r in range(args.rounds):
                order = [(facade, f_times), (raw, r_times)]
                for fn, out in order if r % 2 == 0 else reversed(order):
                    out.append(_timed(fn, args.calls))
            f, r = statistics.median(f_times), statistics.median(r_times)
            print(f"  {name:<15} façade {f:6.2f}   raw SQL {r:6.2f}   ratio {f / r:.2f}")
        conn.close()


if __name__ == "__main__":
    main()
