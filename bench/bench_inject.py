"""get_injection() latency, in process, on a large compacted index (goal <= 50 ms).

Three cases, interleaved call by call: the freshness check with nothing new (the fast path),
no check (refresh=False), and the freshness check with new events waiting in the spool (the
slow path: ingest them and compact the memory before answering; the events are appended
before each call, outside the timed part).

python bench/bench_inject.py                  # 1,000,000 indexed events
python bench/bench_inject.py --events 100000  # a quicker run
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_index import build

from ctxd_hook.hook import append_line, build_line, segment_name
from indexer.config import Config
from indexer.index import store
from indexer.paths import StatePaths
from summarizer import ContextAgent
from summarizer.memory.compact import compact_and_publish
from summarizer.memory.inject_cache import render_injection
from summarizer.resume.writer import refresh_after_compaction

_serial = itertools.count()


def append_events(paths: StatePaths, n: int) -> None:
    """Append n new, distinct tool events to the spool, as the hook writes them."""
    for _ in range(n):
        k = next(_serial)
        event = {
            "session_id": "bench-stale-0001",
            "cwd": "/home/dev/project",
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_use_id": f"toolu_stale_{k:08d}",
            "tool_input": {"command": f"pytest -k case_{k}", "description": f"Run case {k}"},
            "tool_response": {"stdout": f"case {k}: 1 failed", "stderr": "", "interrupted": False},
        }
        ts = time.time_ns()
        line = build_line(json.dumps(event, separators=(",", ":")).encode(), ts, 4242)
        append_line(str(paths.spool), segment_name(ts), line)


def summary(ms: list[float]) -> tuple[float, float]:
    ordered = sorted(ms)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="index size")
    parser.add_argument("--calls", type=int, default=50, help="timed calls per variant")
    parser.add_argument(
        "--stale-events", type=int, default=20, help="new spool events before each slow-path call"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = StatePaths(Path(tmp) / "state")
        paths.ensure()
        print(f"building and compacting {args.events:,} events …", flush=True)
        gen_s = build(paths.index_db, args.events)
        conn = store.connect(paths.index_db)
        t = time.perf_counter()
        compact_and_publish(
            conn, paths, Config(), trigger="bench", after=[refresh_after_compaction]
        )
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
        stale = f"check, {args.stale_events} new events"
        cases = [
            ("check, nothing new", fresh, 0),
            ("no check (refresh=False)", cached, 0),
            (stale, fresh, args.stale_events),
        ]
        ms: dict[str, list[float]] = {label: [] for label, _, _ in cases}
        for _label, agent, new in cases:  # warm-up
            append_events(paths, new)
            agent.get_injection("F-1", 2000)
        for _ in range(args.calls):
            for label, agent, new in cases:
                append_events(paths, new)  # outside the timed part
                t = time.perf_counter()
                result = agent.get_injection("F-1", 2000)
                ms[label].append((time.perf_counter() - t) * 1000)
                assert "error" not in result, result
        print(f"get_injection() on {args.events:,} indexed events ({args.calls} calls each):")
        for label, _, _ in cases:
            median, p95 = summary(ms[label])
            print(f"  {label:<28} median {median:7.1f} ms   p95 {p95:7.1f} ms")
        print("goal: <= 50 ms in process")
    return 0


if __name__ == "__main__":
    sys.exit(main())
