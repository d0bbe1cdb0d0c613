"""The hook's wall time for a Codex CLI event against a Claude Code event, like for like.

Every variant is the installed hook (`python -I -S ctxd_hook/run_hook.py`, a real process) fed a
real payload on stdin and appending to a real spool:
  - claude                  a Claude Code PostToolUse of Bash (the demo session's);
  - codex, same payload     that payload with `--host codex` (only the host differs);
  - codex                   Codex 0.171.0's PostToolUse of a shell command, with `--host codex`
                            (tests/data/codex/session-0.171.0);
  - SessionStart(startup)   of each client, nothing open in the project (the hook prints nothing);
and, for reference only, the codex variant as Codex starts it (`bash -lc "exec …"`: Codex runs
every hook through the user's login shell; that shell is Codex's cost, not the hook's).
Each round runs all variants in a fresh random order; ratios are of medians (and p95s).

    python bench/bench_hook_hosts.py [--runs 200]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
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
FIXTURE = REPO / "tests" / "data" / "codex" / "session-0.171.0" / "hook-payloads.jsonl"


def timed(argv: list[str], stdin: bytes, env: dict[str, str], cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(argv, input=stdin, env=env, cwd=cwd, stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1000


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def _payloads(project: str) -> dict[str, bytes]:
    claude = next(
        p for p in demo_session(project)
        if p["hook_event_name"] == "PostToolUse" and p["tool_name"] == "Bash"
    )  # fmt: skip
    codex_events = [json.loads(x) for x in FIXTURE.read_text().splitlines() if x.strip()]
    codex = next(p for p in codex_events if p["hook_event_name"] == "PostToolUse"
                 and p["tool_name"] == "Bash")  # fmt: skip
    codex_start = next(p for p in codex_events if p["hook_event_name"] == "SessionStart")
    claude_start = {"session_id": claude["session_id"], "hook_event_name": "SessionStart",
                    "source": "startup", "cwd": project}  # fmt: skip
    return {
        "claude": json.dumps(claude).encode(),
        "codex": json.dumps(codex).encode(),
        "claude start": json.dumps(claude_start).encode(),
        "codex start": json.dumps({**codex_start, "cwd": project}).encode(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = str(Path(tmp) / "proj")
        os.mkdir(project)
        payloads = _payloads(project)
        codex_line = "exec " + shlex.join([*HOOK, "--host", "codex"])
        variants: dict[str, tuple[list[str], bytes]] = {
            "python -I -S -c pass": ([sys.executable, "-I", "-S", "-c", "pass"], b""),
            "claude PostToolUse": (HOOK, payloads["claude"]),
            "codex, same payload": ([*HOOK, "--host", "codex"], payloads["claude"]),
            "codex PostToolUse": ([*HOOK, "--host", "codex"], payloads["codex"]),
            "claude SessionStart": (HOOK, payloads["claude start"]),
            "codex SessionStart": ([*HOOK, "--host", "codex"], payloads["codex start"]),
            "codex via bash -lc": (["/bin/bash", "-lc", codex_line], payloads["codex"]),
        }
        env = {"CTXD_HOME": str(Path(tmp) / "state"), "PATH": os.environ.get("PATH", ""),
               "HOME": tmp}  # fmt: skip
        for argv, stdin in variants.values():  # warm the page cache and the bytecode
            timed(argv, stdin, env, project)
        samples: dict[str, list[float]] = {name: [] for name in variants}
        names = list(variants)
        rng = random.Random(7)
        for _ in range(args.runs):
            rng.shuffle(names)
            for name in names:
                argv, stdin = variants[name]
                samples[name].append(timed(argv, stdin, env, project))
        spool = Path(tmp) / "state" / "spool"
        lines = sum(p.read_bytes().count(b"\n") for p in spool.glob("*.jsonl"))
    sizes = ", ".join(f"{k} {len(v)} B" for k, v in payloads.items())
    print(f"{args.runs} runs each; payloads: {sizes}; {lines} spool lines written")
    for name, values in samples.items():
        median, p95 = summary(values)
        print(f"{name:24s} median {median:6.2f} ms  p95 {p95:6.2f} ms")
    for name, base, label in (
        ("codex, same payload", "claude PostToolUse", "the host argument alone"),
        ("codex PostToolUse", "claude PostToolUse", "each client's own payload"),
        ("codex SessionStart", "claude SessionStart", "SessionStart(startup), nothing open"),
        ("claude PostToolUse", "python -I -S -c pass", "the hook vs a bare start"),
    ):
        (median, p95), (b_median, b_p95) = summary(samples[name]), summary(samples[base])
        print(f"{name} / {base}: {median / b_median:4.2f}x median, {p95 / b_p95:4.2f}x p95"
              f"  ({label})")  # fmt: skip
    print("goal: codex / claude = 1.00x (within the noise of this machine)")


if __name__ == "__main__":
    main()
