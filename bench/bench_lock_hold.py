"""How long a compaction holds the daemon's index lock, the time an ingest pass may have to wait.

    python bench/bench_lock_hold.py [--events 20000] [--rounds 3]

Generates an index (bench/gen_index.py), then compacts it with compact_and_publish() as the
daemon does, passing a lock that records each hold; prints the longest hold, the sum of the
holds and the whole compaction's time. Several rounds (fresh index each); medians are printed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_index import build

from indexer.config import Config
from indexer.index import store
from indexer.paths import StatePaths
from summarizer.memory.compact import compact_and_publish
from summarizer.resume.writer import refresh_after_compaction


class TimedLock:
    """A threading.Lock that records how long each `with` held it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.holds: list[float] = []
        self._since = 0.0

    def __enter__(self) -> TimedLock:
        self._lock.acquire()
        self._since = time.perf_counter()
        return self

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.holds.append(time.perf_counter() - self._since)
        self._lock.release()


def one_round(root: Path, events: int) -> tuple[float, float, float, int]:
    paths = StatePaths(root)
    paths.ensure()
    build(paths.index_db, events)
    conn = store.connect(paths.index_db)
    lock = TimedLock()
    try:
        started = time.perf_counter()
        compact_and_publish(
            conn, paths, Config(), trigger="bench", lock=lock, after=[refresh_after_compaction]
        )
        whole = time.perf_counter() - started
    finally:
        conn.close()
    return max(lock.holds), sum(lock.holds), whole, len(lock.holds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results = []
    for r in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            results.append(one_round(Path(tmp) / f"round{r}", args.events))
    longest, held, whole, count = (statistics.median(x) for x in zip(*results, strict=True))
    print(
        f"compaction of {args.events:,} events: longest index-lock hold {longest * 1000:.1f} ms, "
        f"{count:.0f} holds totalling {held * 1000:.0f} ms of {whole * 1000:.0f} ms "
        f"({held / whole:.0%} of the run under the lock)"
    )


if __name__ == "__main__":
    main()
