"""`ctxd inject` and `ctxd status` against `python -I -c pass`, interleaved in one run (goal <= 5x).

Builds a project with N indexed events (views written, memory compacted, context files
current), then times whole processes: the `ctxd` console script for both commands and the bare
interpreter, in rotating order so that machine noise hits all three alike.

    python bench/bench_read_cmds.py                    # 1,000,000 events
    python bench/bench_read_cmds.py --events 200000    # a quicker run
    python bench/bench_read_cmds.py --dir /tmp/rc1m    # build there and keep it; run again to reuse

The project takes minutes to build at 1,000,000 events: with --dir it is built once and reused
while it holds the requested number of events (delete the directory afterwards).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_read import run  # noqa: E402
from gen_index import build  # noqa: E402

from indexer.config import Config  # noqa: E402
from indexer.index import store  # noqa: E402
from indexer.paths import StatePaths  # noqa: E402
from indexer.writer.catch_up import open_writer  # noqa: E402
from summarizer.memory.compact import compact_and_publish  # noqa: E402
from summarizer.memory.inject_cache import CACHE_FILE  # noqa: E402
from summarizer.resume.writer import refresh_after_compaction  # noqa: E402


def ctxd_command() -> list[str]:
    """The installed console script next to this interpreter, else `python -m summarizer.cli.app`."""
    script = Path(sys.executable).with_name("ctxd")
    if script.exists():
        return [str(script)]
    found = shutil.which("ctxd")
    return [found] if found else [sys.executable, "-m", "summarizer.cli.app"]


def prepare(paths: StatePaths, events: int) -> None:
    """Index `events` generated events, write their views, compact and publish."""
    t = time.perf_counter()
    build(paths.index_db, events)
    writer = open_writer(paths, Config())
    try:
        writer.start()  # the views, as the daemon writes them
    finally:
        writer.close()
    conn = store.connect(paths.index_db)
    try:
        compact_and_publish(
            conn, paths, Config(), trigger="bench", after=[refresh_after_compaction]
        )
    finally:
        conn.close()
    print(f"prepared {events:,} events in {time.perf_counter() - t:.1f} s", flush=True)


def indexed(paths: StatePaths) -> int:
    """Entries in an existing index (0 if there is none)."""
    if not paths.index_db.exists():
        return 0
    conn = sqlite3.connect(f"file:{paths.index_db}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM entries").fetchone()[0])
    finally:
        conn.close()


@contextlib.contextmanager
def project_dir(kept: str | None) -> Iterator[str]:
    """A temporary directory, or the kept one given with --dir (created if missing)."""
    if kept is None:
        with tempfile.TemporaryDirectory() as tmp:
            yield tmp
    else:
        Path(kept).mkdir(mode=0o700, parents=True, exist_ok=True)
        yield kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="indexed events")
    parser.add_argument("--runs", type=int, default=20, help="timed runs of each command")
    parser.add_argument("--dir", help="build the project here and keep it (reused when it fits)")
    args = parser.parse_args()
    with project_dir(args.dir) as tmp:
        paths = StatePaths(Path(tmp) / "state")
        ready = (paths.context / CACHE_FILE).exists() and indexed(paths) == args.events
        if ready:
            print(f"reusing the {args.events:,}-event project in {tmp}", flush=True)
        else:
            if paths.root.exists():
                shutil.rmtree(paths.root)
            paths.ensure()
            prepare(paths, args.events)
        assert (paths.context / CACHE_FILE).exists(), "the compaction kept no injection"
        env = {"PATH": os.environ.get("PATH", ""), "HOME": tmp}
        ctxd = ctxd_command()
        commands = {
            "python -I -c pass": [sys.executable, "-I", "-c", "pass"],
            "ctxd inject": [*ctxd, "inject", "--state-dir", str(paths.root)],
            "ctxd status": [*ctxd, "status", "--state-dir", str(paths.root)],
        }
        for argv in commands.values():
            run(argv, env)  # warm the page cache
        walls: dict[str, list[float]] = {name: [] for name in commands}
        rss: dict[str, list[float]] = {name: [] for name in commands}
        names = list(commands)
        for i in range(args.runs):
            for name in names[i % 3 :] + names[: i % 3]:
                wall, peak = run(commands[name], env)
                walls[name].append(wall)
                rss[name].append(peak)
        index_mb = paths.index_db.stat().st_size / 1e6
    base = statistics.median(walls["python -I -c pass"])
    print(f"{args.events:,} indexed events, index {index_mb:.0f} MB, {args.runs} runs each")
    for name in names:
        median = statistics.median(walls[name])
        print(
            f"  {name:<18} median {median:6.1f} ms  ({median / base:4.1f}x)  "
            f"peak RSS {max(rss[name]):5.1f} MB"
        )
    print("goal: ctxd inject and ctxd status <= 5x python -I -c pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
