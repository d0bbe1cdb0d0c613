"""The hook run as a Claude Code plugin vs as `ctxd init` installs it, per event, same run.

Four real processes, each fed a payload on stdin, in a fresh random order every round:
  - PostToolUse, plugin      `python3 -I -S <plugin>/indexer/run_hook.py` with CLAUDE_PLUGIN_ROOT
  - PostToolUse, init        the same script without CLAUDE_PLUGIN_ROOT (what `ctxd init` runs)
  - SessionStart, plugin     startup with a project memory; handed to the installed `ctxd`
                             command's interpreter (one more process, with site)
  - SessionStart, init       the same event answered in process
plus `python -I -S -c pass` as the bare start. Ratios are of medians.

    python bench/bench_plugin_hook.py [--runs 40]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(argv: list[str], stdin: bytes, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, input=stdin, env=env, stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ctxd-bench-plugin-"))
    try:
        plugin = work / "plugin"
        ignore = shutil.ignore_patterns("__pycache__")
        for package in ("indexer", "summarizer"):
            shutil.copytree(REPO / package, plugin / package, ignore=ignore)
        bin_dir = work / "bin"
        bin_dir.mkdir()
        ctxd = Path(sys.executable).parent / "ctxd"
        (bin_dir / "ctxd").symlink_to(ctxd)
        project = work / "proj"
        project.mkdir()
        state = project / ".ctxd"
        base = {"PATH": f"{bin_dir}:/usr/bin:/bin", "CLAUDE_PROJECT_DIR": str(project)}
        # A project memory, so that SessionStart(startup) has something to hand back.
        env_cli = {**os.environ, "CTXD_HOME": str(state)}
        subprocess.run([str(ctxd), "emit", "constraint", "never touch billing"], env=env_cli,
                       check=True, stdout=subprocess.DEVNULL)  # fmt: skip
        subprocess.run([str(ctxd), "compact"], env=env_cli, check=True, stdout=subprocess.DEVNULL)
        tool = json.dumps({"session_id": "b-1", "hook_event_name": "PostToolUse",
                           "tool_name": "Read", "tool_input": {"file_path": "/x"}}).encode()  # fmt: skip
        start = json.dumps({"session_id": "b-1", "hook_event_name": "SessionStart",
                            "source": "startup"}).encode()  # fmt: skip
        hook = [sys.executable, "-I", "-S", str(plugin / "indexer" / "run_hook.py")]
        as_plugin = {**base, "CLAUDE_PLUGIN_ROOT": str(plugin)}
        variants = {
            "python -I -S -c pass": ([sys.executable, "-I", "-S", "-c", "pass"], b"", base),
            "PostToolUse, plugin": (hook, tool, as_plugin),
            "PostToolUse, init": (hook, tool, base),
            "SessionStart, plugin": (hook, start, as_plugin),
            "SessionStart, init": (hook, start, base),
        }
        samples: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.runs):
            order = list(variants)
            random.shuffle(order)
            for name in order:
                argv, stdin, env = variants[name]
                samples[name].append(timed(argv, stdin, env))
        medians = {name: statistics.median(s) for name, s in samples.items()}
        bare = medians["python -I -S -c pass"]
        print(f"{args.runs} interleaved rounds; medians (ms) and ratios")
        for name, value in medians.items():
            print(f"  {name:<22} {value:7.1f} ms  {value / bare:5.2f}x bare start")
        for event in ("PostToolUse", "SessionStart"):
            ratio = medians[f"{event}, plugin"] / medians[f"{event}, init"]
            print(f"  {event}: plugin / init = {ratio:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
