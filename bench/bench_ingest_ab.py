"""One ingest pass with views, CPU time and wall time per event, alternated with another checkout.

On a machine shared with other jobs the wall time of a pass says more about the load than about
the code (a pass may get less than half a core); the CPU time the pass's process used is the
work done. Each run is a child process on a fresh state directory whose spool is hard links to
one corpus-shaped spool (bench_ingest's), so both trees ingest the same bytes, and the trees
alternate run by run.

    python bench/bench_ingest_ab.py --baseline /tmp/base [--events 30000] [--rounds 3]
    (git archive main | tar -x -C /tmp/base gives a baseline checkout)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def child(tree: Path, spool: Path) -> None:
    """One pass with `tree`'s code over a copy (hard links) of `spool`; print the figures."""
    sys.path.insert(0, str(tree))
    from indexer.config import Config
    from indexer.paths import StatePaths
    from indexer.writer.catch_up import open_writer

    with tempfile.TemporaryDirectory() as tmp:
        paths = StatePaths(Path(tmp) / "state")
        paths.ensure()
        for segment in sorted(spool.iterdir()):
            os.link(segment, paths.spool / segment.name)
        writer = open_writer(paths, Config())
        writer.start()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        stats = writer.pass_once()
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        writer.close()
    print(stats.entries, cpu, wall)


def run(tree: Path, spool: Path) -> tuple[int, float, float]:
    cmd = [sys.executable, __file__, "--child", str(tree), "--spool", str(spool)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()
    return int(out[-3]), float(out[-2]), float(out[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=False, help="the checkout to compare")
    parser.add_argument("--events", type=int, default=30_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--spool", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.spool)
        return
    sys.path.insert(0, str(REPO / "bench"))
    from bench_ingest import build_spool, sample_payloads

    trees = [("this tree", REPO)] + ([("baseline", args.baseline)] if args.baseline else [])
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in trees}
    with tempfile.TemporaryDirectory() as tmp:
        spool = Path(tmp) / "spool"
        size = build_spool(spool, args.events)
        print(
            f"{args.events:,} events, {size / 1e6:.1f} MB, shaped like the {sample_payloads()[1]}"
        )
        for r in range(args.rounds):
            for name, tree in trees if r % 2 == 0 else trees[::-1]:
                n, cpu, wall = run(tree, spool)
                assert n == args.events, n
                figures[name].append((1e6 * cpu / n, 1e6 * wall / n))
                print(f"  {name:<10} CPU {1e6 * cpu / n:6.1f} µs/event, wall {1e6 * wall / n:6.1f}")
    medians = {name: statistics.median(c for c, _ in f) for name, f in figures.items()}
    line = f"median CPU per event: this tree {medians['this tree']:.1f} µs"
    if args.baseline:
        base = medians["baseline"]
        line += f", baseline {base:.1f} µs: ratio {medians['this tree'] / base:.3f}"
    print(line)


if __name__ == "__main__":
    main()
