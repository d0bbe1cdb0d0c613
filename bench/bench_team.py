"""Team store speed: shipping against local ingest, `ctxd search --team` at 1,000,000 entries, and
how soon an appended event is visible in the team store with the daemon running.

Starts its own PostgreSQL (initdb, pg_ctl on a Unix socket in a temporary directory, fsync on,
as the `postgres` user when run as root). Three parts, each against a baseline of the same run:

  1. rate: the real daemon (`ctxd run`) on a spool of N corpus-shaped events (bench_ingest's),
     alone and with shipping, alternated (`--rounds`): how fast it indexes, how fast the team
     store's cursor follows, the largest lag and how long shipping needs after ingest ends;
     then the shipper alone over the finished index (entries/s).
  2. search: an index of --entries events (bench_search's build), shipped whole; in-process
     `summarizer.team.search.search` (what `ctxd search --team` runs) on one connection against local search
     on the same index, the same queries (drawn from the indexed text): median, p95.
  3. latency: with the daemon running and shipping, --appends events appended to the spool
     one at a time (as the hook writes them), each waited for in the local index and in the
     team store: p50, p99 of append-to-indexed and append-to-team-visible.

    python bench/bench_team.py [--events 200000] [--entries 1000000] [--appends 200]
                               [--only rate|search|latency] [--rounds 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

import psycopg  # noqa: E402
from bench_ingest import build_spool  # noqa: E402
from bench_search import build as build_index  # noqa: E402
from bench_search import queries  # noqa: E402
from pg_helpers import PgCluster  # noqa: E402

from ctxd_hook.hook import append_line, build_line, segment_name  # noqa: E402
from indexer.config import parse_config  # noqa: E402
from indexer.index import store  # noqa: E402
from indexer.paths import StatePaths  # noqa: E402
from summarizer.search.service import Filters, search  # noqa: E402
from summarizer.team import search as team_search  # noqa: E402
from summarizer.team.schema import migrate  # noqa: E402
from summarizer.team.shipper import Shipper  # noqa: E402

PROJECT = "bench/team"


def _database(cluster: PgCluster) -> str:
    dsn = cluster.dsn(cluster.create_database())
    with psycopg.connect(dsn, autocommit=True) as conn:
        migrate(conn)
    return dsn


def _configure(paths: StatePaths, dsn: str | None) -> None:
    paths.ensure()
    text = "[daemon]\nrescan_interval_s = 0.2\n"
    if dsn:
        text += f'\n[team]\ndsn = "{dsn}"\nproject = "{PROJECT}"\n'
    paths.config.write_text(text)


def _daemon(paths: StatePaths) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXD_", "CLAUDE"))}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.Popen(
        [sys.executable, "-m", "summarizer.cli.app", "run", "--state-dir", str(paths.root)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)


def _local_top(paths: StatePaths) -> int:
    try:
        conn = sqlite3.connect(f"file:{paths.index_db}?mode=ro", uri=True, timeout=10)
        try:
            return int(conn.execute("SELECT coalesce(max(id), 0) FROM entries").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def _team_cursor(conn: Any) -> int:
    row = conn.execute("SELECT max(entry_cursor) FROM ctxd.machines").fetchone()
    return int(row[0] or 0)


# --- 1. rate ------------------------------------------------------------------------------


def rate_run(template: Path, work: Path, dsn: str | None, expected: int) -> dict[str, float]:
    """One daemon on a copy (hard links) of the spool; sampled until everything is indexed
    (and shipped)."""
    paths = StatePaths(work)
    _configure(paths, dsn)
    for segment in template.iterdir():
        os.link(segment, paths.spool / segment.name)
    conn = psycopg.connect(dsn, autocommit=True) if dsn else None
    started = time.perf_counter()
    proc = _daemon(paths)
    indexed_at = shipped_at = 0.0
    max_lag = lag_at_end = 0
    try:
        while True:
            now = time.perf_counter() - started
            top = _local_top(paths)
            shipped = _team_cursor(conn) if conn else top
            max_lag = max(max_lag, top - shipped)
            if not indexed_at and top >= expected:
                indexed_at, lag_at_end = now, top - shipped
            if indexed_at and shipped >= expected:
                shipped_at = now
                break
            if now > 3600:
                raise TimeoutError("the run did not finish within an hour")
            time.sleep(0.2)
    finally:
        _stop(proc)
        if conn:
            conn.close()
    shutil.rmtree(work, ignore_errors=True)
    return {
        "indexed_s": indexed_at,
        "shipped_s": shipped_at,
        "max_lag": max_lag,
        "lag_at_end": lag_at_end,
        "after_s": shipped_at - indexed_at,
    }


def part_rate(cluster: PgCluster, tmp: Path, events: int, rounds: int) -> None:
    template = tmp / "spool"
    print(f"[rate] building a spool of {events:,} corpus-shaped events")
    build_spool(template, events)
    # The number of entries these events make (a few are not stored: bad lines, duplicates).
    probe = tmp / "probe"
    first = rate_run(template, probe, None, events)  # warms the page cache too
    expected = _local_top(StatePaths(probe)) or events
    del first
    print(f"[rate] {events:,} events make {expected:,} entries")
    alone, team = [], []
    for r in range(rounds):
        for with_team in ((False, True) if r % 2 == 0 else (True, False)):
            dsn = _database(cluster) if with_team else None
            got = rate_run(template, tmp / f"run-{r}-{with_team}", dsn, expected)
            (team if with_team else alone).append(got)
            what = "with shipping" if with_team else "alone       "
            print(
                f"[rate] daemon {what}: indexed in {got['indexed_s']:.1f} s"
                f" ({expected / got['indexed_s']:,.0f} entries/s)"
                + (
                    f", shipped in {got['shipped_s']:.1f} s ({expected / got['shipped_s']:,.0f}"
                    f" entries/s), largest lag {got['max_lag']:,} entries, lag when ingest ended"
                    f" {got['lag_at_end']:,}, shipped {got['after_s']:.1f} s after"
                    if with_team
                    else ""
                ),
                flush=True,
            )
    a = statistics.median(g["indexed_s"] for g in alone)
    t = statistics.median(g["indexed_s"] for g in team)
    s = statistics.median(g["shipped_s"] for g in team)
    print(
        f"[rate] medians: ingest alone {expected / a:,.0f}/s; ingest while shipping"
        f" {expected / t:,.0f}/s ({a / t:.2f} of alone); shipping kept {expected / s:,.0f}/s"
        f" = {t / s:.2f} of the ingest it followed"
    )
    # The shipper alone, over a finished index.
    paths = StatePaths(tmp / "alone")
    _configure(paths, None)
    for segment in template.iterdir():
        os.link(segment, paths.spool / segment.name)
    from indexer.writer.catch_up import catch_up

    catch_up(paths)
    dsn = _database(cluster)
    shipper = Shipper(paths, parse_config(f'[team]\nproject = "{PROJECT}"\n'.encode()), dsn)
    t0, c0 = time.perf_counter(), time.process_time()
    report = shipper.ship()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    shipper.close()
    print(
        f"[rate] shipper alone over the finished index: {report.entries:,} entries in"
        f" {wall:.1f} s = {report.entries / wall:,.0f}/s, {1e6 * cpu / report.entries:.1f} µs"
        " CPU per entry in ctxd (the rest is the server's)"
    )
    shutil.rmtree(paths.root, ignore_errors=True)


# --- 2. search ----------------------------------------------------------------------------


def part_search(cluster: PgCluster, tmp: Path, entries: int, count: int) -> None:
    paths = StatePaths(tmp / "search")
    print(f"[search] building an index of {entries:,} corpus-shaped entries")
    build_index(paths, entries)
    dsn = _database(cluster)
    config = parse_config(f'[team]\nproject = "{PROJECT}"\n'.encode())
    shipper = Shipper(paths, config, dsn)
    t0 = time.perf_counter()
    report = shipper.ship()
    wall = time.perf_counter() - t0
    shipper.close()
    print(f"[search] shipped {report.entries:,} entries in {wall:.0f} s ({report.entries / wall:,.0f}/s)")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")  # what autovacuum does after a bulk load
        size = conn.execute("SELECT pg_size_pretty(pg_database_size(current_database()))").fetchone()[0]
    print(f"[search] team database: {size}")
    local = store.connect(paths.index_db, readonly=True)
    texts = queries(local, count)
    filters = [Filters(), Filters(kinds=("error",)), Filters(agent="main")]
    team = psycopg.connect(dsn, autocommit=True)
    try:
        for label, f in zip(("all kinds", "--kind error", "--agent main"), filters, strict=True):
            local_t, team_t = [], []
            for text in texts:  # interleaved: the machine's load moves both alike
                t0 = time.perf_counter()
                search(local, text, f)
                local_t.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                team_search.search(team, PROJECT, text, f, now_ns=time.time_ns(), mark=("**", "**"))
                team_t.append(time.perf_counter() - t0)
            print(
                f"[search] {label}, {len(texts)} queries: team median"
                f" {statistics.median(team_t) * 1e3:.1f} ms, p95 {_p(team_t, 0.95) * 1e3:.1f} ms"
                f" (goal <= 50 ms); local search on the same index median"
                f" {statistics.median(local_t) * 1e3:.1f} ms, p95 {_p(local_t, 0.95) * 1e3:.1f} ms",
                flush=True,
            )
    finally:
        team.close()
        local.close()
    shutil.rmtree(paths.root, ignore_errors=True)


# --- 3. latency ---------------------------------------------------------------------------


def part_latency(cluster: PgCluster, tmp: Path, appends: int) -> None:
    paths = StatePaths(tmp / "latency")
    dsn = _database(cluster)
    _configure(paths, dsn)
    proc = _daemon(paths)
    team = psycopg.connect(dsn, autocommit=True)
    local_s, team_s = [], []
    try:
        for i in range(appends + 5):  # the first 5 warm the daemon and its connection
            ts_ns = time.time_ns()
            event = {
                "session_id": "bench-latency",
                "hook_event_name": "UserPromptSubmit",
                "cwd": "/home/dev/app",
                "prompt": f"step {i}: look at the cache layer",
            }
            line = build_line(json.dumps(event).encode(), ts_ns, 4242)
            t0 = time.perf_counter()
            append_line(str(paths.spool), segment_name(ts_ns), line)
            seen_local = seen_team = 0.0
            while not seen_team:
                now = time.perf_counter() - t0
                if not seen_local and _has(paths, ts_ns):
                    seen_local = now
                if team.execute(
                    "SELECT 1 FROM ctxd.entries WHERE project = %s AND ts_ns = %s", (PROJECT, ts_ns)
                ).fetchone():
                    seen_team = now
                    seen_local = seen_local or now
                if now > 60:
                    raise TimeoutError(f"event {i} not in the team store after 60 s")
                time.sleep(0.002)
            if i >= 5:
                local_s.append(seen_local)
                team_s.append(seen_team)
            time.sleep(0.05)
    finally:
        team.close()
        _stop(proc)
    for label, got in (("append-to-indexed", local_s), ("append-to-team-visible", team_s)):
        print(
            f"[latency] {label}, {len(got)} events: p50 {_p(got, 0.5) * 1e3:.0f} ms,"
            f" p95 {_p(got, 0.95) * 1e3:.0f} ms, p99 {_p(got, 0.99) * 1e3:.0f} ms,"
            f" max {max(got) * 1e3:.0f} ms" + (" (goal p99 <= 2 s)" if label.endswith("visible") else "")
        )
    shutil.rmtree(paths.root, ignore_errors=True)


def _has(paths: StatePaths, ts_ns: int) -> bool:
    try:
        conn = sqlite3.connect(f"file:{paths.index_db}?mode=ro", uri=True, timeout=10)
        try:
            return conn.execute("SELECT 1 FROM entries WHERE ts_ns=?", (ts_ns,)).fetchone() is not None
        finally:
            conn.close()
    except sqlite3.Error:
        return False


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000, help="events of the rate part")
    parser.add_argument("--entries", type=int, default=1_000_000, help="entries of the search part")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--appends", type=int, default=200, help="events of the latency part")
    parser.add_argument("--rounds", type=int, default=1, help="rate runs of each kind")
    parser.add_argument("--only", choices=("rate", "search", "latency"))
    args = parser.parse_args()
    cluster = PgCluster()
    cluster.durable = True
    tmp = Path(tempfile.mkdtemp(prefix="ctxd-bench-team-"))
    try:
        cluster.init()
        cluster.start()
        if args.only in (None, "latency"):
            part_latency(cluster, tmp, args.appends)
        if args.only in (None, "rate"):
            part_rate(cluster, tmp, args.events, args.rounds)
        if args.only in (None, "search"):
            part_search(cluster, tmp, args.entries, args.queries)
    finally:
        cluster.destroy()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
