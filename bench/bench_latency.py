"""Append-to-visible latency with the daemon running: from the hook's append to the entry in the index.

Starts `ctxd run` on a temporary state directory, then for each of N events appends one line
with the hook's own append function (so the time measured is the daemon's, not process start)
and polls the index (read-only SQLite, 1 ms) until that event's (ts_ns, pid) is there.

    python bench/bench_latency.py [--events 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ctxd_hook.hook import append_line, build_line, segment_name  # noqa: E402
from summarizer.cli.commands.demo_session import demo_session  # noqa: E402

_QUERY = "SELECT 1 FROM entries WHERE ts_ns=? AND pid=?"


def wait_for(predicate, timeout_s: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.001)
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1000)
    args = parser.parse_args()
    payloads = demo_session("/home/dev/project")
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        daemon = subprocess.Popen(
            [sys.executable, "-m", "summarizer.cli.app", "run", "--state-dir", str(state)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            db = state / "index.db"
            if not wait_for((state / "daemon.json").exists, 30):
                raise SystemExit("the daemon did not start")
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            latencies: list[float] = []
            for i in range(args.events):
                p = dict(payloads[i % len(payloads)])
                p["tool_use_id"] = f"toolu_latency_{i:06d}"
                ts_ns = time.time_ns()
                line = build_line(json.dumps(p).encode(), ts_ns, os.getpid())
                start = time.perf_counter()
                append_line(str(state / "spool"), segment_name(ts_ns), line)
                key = (ts_ns, os.getpid())
                if not wait_for(lambda key=key: conn.execute(_QUERY, key).fetchone(), 10):
                    raise SystemExit(f"event {i} never became visible")
                latencies.append((time.perf_counter() - start) * 1000)
                time.sleep(0.002)  # events arrive apart, as hooks do
            conn.close()
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=30)
    ordered = sorted(latencies)
    p50 = statistics.median(ordered)
    p99 = ordered[int(0.99 * (len(ordered) - 1))]
    print(
        f"{args.events} events: append-to-visible p50 {p50:.1f} ms, p99 {p99:.1f} ms, "
        f"max {ordered[-1]:.1f} ms (goal: p99 < 50 ms)"
    )


if __name__ == "__main__":
    main()
