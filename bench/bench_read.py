"""`ctxd read --lines 100` on a 50 MB single-agent history: wall time and peak RSS of the process.

Builds one agent's history of about 50 MB through the real ingest path (spool → index → view),
then times the whole `ctxd read` process (catch-up included) against `python -I -c pass` with
the same interpreter, reading peak RSS from the child's rusage.

    python bench/bench_read.py [--mb 50] [--runs 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ctxd_hook.hook import build_line  # noqa: E402
from indexer.paths import StatePaths  # noqa: E402
from indexer.writer.catch_up import catch_up  # noqa: E402

_LAUNCHER = (
    "import os, sys, time; argv = sys.argv[1:]; t = time.perf_counter();"
    "pid = os.posix_spawn(argv[0], argv, dict(os.environ), file_actions=["
    "(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)]);"
    "_, status, usage = os.wait4(pid, 0);"
    "print((time.perf_counter() - t) * 1000, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status))"
)


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall ms and peak RSS MB of one child process.

    The child is spawned by a tiny launcher: a child's ru_maxrss counts the memory of the
    process that spawned it until exec, so spawning from this (large) process would inflate it.
    """
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _LAUNCHER, *argv],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if out[2] != "0":
        raise SystemExit(f"{argv} failed")
    return float(out[0]), float(out[1])


def build_history(state: Path, target_mb: int) -> int:
    """Spool one subagent's events until its view is about target_mb; return the event count."""
    paths = StatePaths(state)
    paths.ensure()
    prompt = "AgentId: bench-agent\n" + "Analyse the module and report. " * 20
    events = [
        {
            "session_id": "bench-session",
            "hook_event_name": "PreToolUse",
            "tool_name": "Agent",
            "tool_use_id": "toolu_agent",
            "tool_input": {"description": "bench", "prompt": prompt, "subagent_type": "Explore"},
        },
        {
            "session_id": "bench-session",
            "hook_event_name": "SubagentStart",
            "agent_id": "abench0000000001",
            "agent_type": "Explore",
        },
    ]
    n = 0
    size = 0
    while size < target_mb * 1_000_000:
        n += 1
        events.append(
            {
                "session_id": "bench-session",
                "hook_event_name": "PostToolUse",
                "agent_id": "abench0000000001",
                "agent_type": "Explore",
                "tool_name": "Bash",
                "tool_use_id": f"toolu_{n:08d}",
                "tool_input": {
                    "command": f"grep -rn pattern_{n} src/",
                    "description": "Search " * 40,
                },
                "tool_response": {"stdout": f"src/module.py:{n}: match\n" * 40, "stderr": ""},
            }
        )
        size += 1500
    lines = [
        build_line(json.dumps(e).encode(), 1_790_000_000_000_000_000 + i * 1000, 1)
        for i, e in enumerate(events)
    ]
    (paths.spool / "20260101T00.jsonl").write_bytes(b"".join(lines))
    catch_up(paths)
    return len(events)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        events = build_history(state, args.mb)
        view = next((state / "sessions" / "bench-session").glob("bench-agent.jsonl"))
        env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO)}
        read = [
            sys.executable,
            "-m",
            "summarizer.cli.app",
            "read",
            "--agent-id",
            "bench-agent",
            "--lines",
            "100",
            "--state-dir",
            str(state),
        ]
        base = [sys.executable, "-I", "-c", "pass"]
        run(read, env)
        walls: dict[str, list[float]] = {"base": [], "read": []}
        rss: dict[str, list[float]] = {"base": [], "read": []}
        for _ in range(args.runs):
            for name, argv in (("base", base), ("read", read)):
                w, r = run(argv, env)
                walls[name].append(w)
                rss[name].append(r)
        print(
            f"history: {events} events, view {view.stat().st_size / 1e6:.1f} MB, "
            f"index {(state / 'index.db').stat().st_size / 1e6:.1f} MB"
        )
    bw, rw = statistics.median(walls["base"]), statistics.median(walls["read"])
    print(f"python -I -c pass:       median {bw:6.1f} ms, peak RSS {max(rss['base']):5.1f} MB")
    print(
        f"ctxd read --lines 100:   median {rw:6.1f} ms, peak RSS {max(rss['read']):5.1f} MB  "
        f"ratio {rw / bw:.1f}x  (goal <= 10x and <= 60 MB)"
    )


if __name__ == "__main__":
    main()
