"""Search speed: in-process p95 for 1-3 word queries, and the `ctxd search` process vs bare Python.

Builds (or, with --reuse, reuses) a state directory under /tmp holding an index of N entries
shaped like the corpus (bench_ingest's spool: the real hook payloads, replayed as new
sessions), indexed by the daemon's writer in chunks of 50,000 events (each chunk's spool
segment is deleted once indexed, to bound the disk used), with the memory compacted (which
also merges the FTS5 segments once more than 8 have piled up, as the daemon's compaction does), so that `ctxd search` takes
its fast path as it does on a quiet project. The per-agent views are
deleted after the build (search never reads them). Then:
  1. in-process: summarizer.search.service.search() on one read-only connection, for
     --queries queries of 1, 2 or 3 words drawn from the indexed text (goal p95 <= 20 ms),
     in wall and in CPU time (the CPU time holds when other work shares the cores);
  2. the whole `ctxd search QUERY` process against `python -I -c pass`, interleaved
     (goal <= 5x the median).

    python bench/bench_search.py [--entries 1000000] [--reuse] [--cache DIR] [--keep]

--keep leaves the index in place for a later run with --reuse.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_ingest import build_spool  # noqa: E402

from indexer.config import Config  # noqa: E402
from indexer.index import store  # noqa: E402
from indexer.paths import StatePaths  # noqa: E402
from indexer.retention.spool import RetentionReport, delete_segment  # noqa: E402
from indexer.search import index as search_index  # noqa: E402
from indexer.search import merge as search_merge  # noqa: E402
from indexer.writer.catch_up import open_writer, writer_lock  # noqa: E402
from summarizer.memory.compact import compact_now  # noqa: E402
from summarizer.resume.writer import refresh_after_compaction  # noqa: E402
from summarizer.search.service import Filters, current_connection, search  # noqa: E402

CHUNK = 50_000
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]{2,}")


def build(paths: StatePaths, n: int) -> None:
    """Index n corpus-shaped events into `paths`, chunk by chunk, then compact the memory."""
    paths.ensure()
    done = 0
    while done < n:
        size = min(CHUNK, n - done)
        build_spool(paths.spool, size, start=done)
        chunk = done // CHUNK
        name = f"202601{1 + chunk // 24:02d}T{chunk % 24:02d}.jsonl"  # one sealed hour each
        (paths.spool / "20260101T00.jsonl").rename(paths.spool / name)
        with writer_lock(paths):
            writer = open_writer(paths, Config())
            try:
                writer.start()
                while writer.pass_once().lines:
                    pass
                # Retired as retention does it (indexed whole), then deleted: bounded disk.
                delete_segment(
                    writer.conn, paths, name, store.active_files(writer.conn).get(name),
                    RetentionReport(), lambda _fd: True,
                )  # fmt: skip
            finally:
                writer.close()
        done += size
        print(f"  indexed {done:,} events", flush=True)
    compact_now(paths, Config(), trigger="bench", after=[refresh_after_compaction])
    shutil.rmtree(paths.sessions, ignore_errors=True)


def queries(conn: sqlite3.Connection, count: int, seed: int = 7) -> list[str]:
    """1-3 word queries whose words come from (and so match) indexed documents."""
    rng = random.Random(seed)
    top = conn.execute("SELECT max(rowid) FROM search").fetchone()[0] or 0
    out: list[str] = []
    while len(out) < count and top:
        row = conn.execute(
            "SELECT body FROM search WHERE rowid >= ? ORDER BY rowid LIMIT 1",
            (rng.randint(1, top),),
        ).fetchone()
        words = _WORD.findall(row[0]) if row else []
        if not words:
            continue
        start = rng.randrange(len(words))
        out.append(" ".join(words[start : start + rng.randint(1, 3)]))
    return out


def in_process(paths: StatePaths, texts: list[str], filters: Filters | None = None) -> list[float]:
    return [wall for wall, _ in timed(paths, texts, filters)]


def timed(
    paths: StatePaths, texts: list[str], filters: Filters | None = None
) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of each search: the CPU time holds when other work shares the cores."""
    conn = current_connection(paths)
    assert conn is not None
    times = []
    try:
        for text in texts:
            t0, c0 = time.perf_counter(), time.process_time()
            search(conn, text, filters or Filters())
            times.append((time.perf_counter() - t0, time.process_time() - c0))
    finally:
        conn.close()
    return times


def processes(paths: StatePaths, texts: list[str], rounds: int) -> tuple[list[float], list[float]]:
    ctxd = Path(sys.executable).with_name("ctxd")
    command = [str(ctxd)] if ctxd.exists() else [sys.executable, "-m", "summarizer.cli.app"]
    bare_cmd = [sys.executable, "-I", "-c", "pass"]
    bare, full = [], []
    for i in range(rounds):
        t0 = time.perf_counter()
        subprocess.run(bare_cmd, check=True)
        bare.append(time.perf_counter() - t0)
        cmd = [*command, "search", texts[i % len(texts)], "--state-dir", str(paths.root)]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        full.append(time.perf_counter() - t0)
    return bare, full


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=30, help="process runs of each kind")
    parser.add_argument("--cache", help="state directory (default /tmp/ctxd-bench-search-N)")
    parser.add_argument("--reuse", action="store_true", help="reuse the cached index if built")
    parser.add_argument("--keep", action="store_true", help="keep the index afterwards")
    args = parser.parse_args()
    root = Path(args.cache or f"/tmp/ctxd-bench-search-{args.entries}")
    paths = StatePaths(root)
    if not (args.reuse and paths.index_db.exists()):
        shutil.rmtree(root, ignore_errors=True)
        print(f"building an index of {args.entries:,} corpus-shaped entries in {root}")
        t0 = time.perf_counter()
        build(paths, args.entries)
        print(f"  built in {time.perf_counter() - t0:.0f} s")
    try:
        conn = store.connect(paths.index_db, readonly=True)
        entries = store.count(conn, "entries")
        documents = search_index.count_documents(conn)
        segments = search_merge.segment_count(conn)
        texts = queries(conn, args.queries)
        biggest = conn.execute("SELECT session_id FROM sessions ORDER BY events DESC").fetchone()[0]
        conn.close()
        size_mb = sum(p.stat().st_size for p in root.glob("index.db*")) / 1e6
        print(
            f"index: {entries:,} entries, {documents:,} search documents, {size_mb:.0f} MB,"
            f" {segments} FTS5 segment(s)"
        )
        for words in (1, 2, 3):
            mine = [t for t in texts if len(t.split()) == words]
            both = timed(paths, mine)
            times = sorted(wall for wall, _ in both)
            cpu = sorted(c for _, c in both)
            p95 = times[int(0.95 * (len(times) - 1))] * 1e3
            print(
                f"in-process search, {words} word(s), {len(mine)} queries: median"
                f" {statistics.median(times) * 1e3:.1f} ms, p95 {p95:.1f} ms,"
                f" max {times[-1] * 1e3:.1f} ms (goal p95 <= 20 ms); CPU median"
                f" {statistics.median(cpu) * 1e3:.1f} ms, p95 {cpu[int(0.95 * (len(cpu) - 1))] * 1e3:.1f} ms"
            )
        times = sorted(in_process(paths, texts))
        print(f"in-process search, all: p95 {times[int(0.95 * (len(times) - 1))] * 1e3:.1f} ms")
        for label, narrowed in (
            (f"--session {biggest[:8]}", Filters(session=biggest[:8])),
            ("--kind error", Filters(kinds=("error",))),
            ("--agent main", Filters(agent="main")),
        ):
            times = sorted(in_process(paths, texts, narrowed))
            print(
                f"in-process search {label}: median {statistics.median(times) * 1e3:.1f} ms,"
                f" p95 {times[int(0.95 * (len(times) - 1))] * 1e3:.1f} ms"
            )
        bare, full = processes(paths, texts, args.rounds)
        b, f = statistics.median(bare), statistics.median(full)
        print(
            f"process: `ctxd search` median {f * 1e3:.0f} ms, `python -I -c pass` {b * 1e3:.0f} ms"
            f" (interleaved, {args.rounds} each): {f / b:.1f}x (goal <= 5x)"
        )
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
