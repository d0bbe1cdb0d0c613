"""SubagentStart hook wall time (handing a subagent its handoff) vs `python -I -c pass`.

Interleaved in one run: the baseline interpreter start, SubagentStart with a handoff queued
(an `AgentId:` agent that ran before: its account is printed), SubagentStart with nothing
queued, and, for the cost at the call, the Agent PreToolUse hook that queues the handoff.
Goal: SubagentStart within 3x the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from summarizer.cli.commands.demo_session import demo_session  # noqa: E402

HOOK = [sys.executable, "-I", "-S", str(REPO / "plugin" / "ctxd_hook" / "run_hook.py")]
BASELINE = [sys.executable, "-I", "-c", "pass"]
BARE = [sys.executable, "-I", "-S", "-c", "pass"]  # no site import: the hook's own start
SID = "bench-handoff-0001"


def _run(argv: list[str], stdin: bytes, env: dict[str, str], cwd: Path) -> tuple[float, bytes]:
    t = time.perf_counter()
    done = subprocess.run(argv, input=stdin, env=env, cwd=cwd, capture_output=True, check=True)
    return time.perf_counter() - t, done.stdout


def _event(**fields: object) -> bytes:
    base: dict[str, object] = {"session_id": SID, "transcript_path": "/t.jsonl", "cwd": "/"}
    base.update(fields)
    return json.dumps(base).encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ctxd-bench-handoff-"))
    try:
        project = root / "app"
        project.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("CTXD_HOME", "PYTHONPATH")}
        env["CLAUDE_PROJECT_DIR"] = str(project)
        for p in demo_session(str(project)):  # arch-001 runs once: its account is written
            _run(HOOK, json.dumps(p).encode(), env, project)
        assert (project / ".ctxd" / "handoff" / "agents" / "arch-001.md").exists()
        call = _event(
            hook_event_name="PreToolUse",
            tool_name="Agent",
            tool_use_id="toolu_b",
            tool_input={"prompt": "AgentId: arch-001\nAgain.", "subagent_type": "Plan"},
        )
        start = _event(
            hook_event_name="SubagentStart", agent_id="a1234567890abcde", agent_type="Plan"
        )
        plain_call = _event(
            hook_event_name="PreToolUse",
            tool_name="Read",
            tool_use_id="toolu_r",
            tool_input={"file_path": "/x"},
        )
        rows: dict[str, list[float]] = {
            "python -I -c pass": [],
            "python -I -S -c pass": [],
            "SubagentStart, handoff printed": [],
            "SubagentStart, nothing queued": [],
            "PreToolUse Agent (queues it)": [],
            "PreToolUse Read (for reference)": [],
        }
        for _ in range(args.runs):
            rows["python -I -c pass"].append(_run(BASELINE, b"", env, project)[0])
            rows["python -I -S -c pass"].append(_run(BARE, b"", env, project)[0])
            seconds, _ = _run(HOOK, call, env, project)
            rows["PreToolUse Agent (queues it)"].append(seconds)
            seconds, out = _run(HOOK, start, env, project)
            assert b"arch-001" in out, out
            rows["SubagentStart, handoff printed"].append(seconds)
            seconds, out = _run(HOOK, start, env, project)
            assert out == b"", out
            rows["SubagentStart, nothing queued"].append(seconds)
            rows["PreToolUse Read (for reference)"].append(_run(HOOK, plain_call, env, project)[0])
        base = statistics.median(rows["python -I -c pass"])
        print(f"{'case':<34} {'median ms':>9} {'p90 ms':>7} {'x baseline':>10}  ({args.runs} runs)")
        for name, times in rows.items():
            med = statistics.median(times)
            p90 = sorted(times)[int(len(times) * 0.9) - 1]
            print(f"{name:<34} {med * 1000:9.1f} {p90 * 1000:7.1f} {med / base:10.2f}")
        ratio = statistics.median(rows["SubagentStart, handoff printed"]) / base
        print(
            f"goal: SubagentStart <= 3.0x baseline: {'met' if ratio <= 3.0 else 'NOT met'} ({ratio:.2f}x)"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
