"""The hook run as a Claude Code plugin vs as `ctxd init` installs it, per event, same run.

Six real processes, each fed a payload on stdin, in a fresh random order every round:
  - PostToolUse, plugin      `python3 -I -S <plugin>/ctxd_hook/run_hook.py` with CLAUDE_PLUGIN_ROOT,
                             from a copy of plugin/ as Claude Code makes it
  - PostToolUse, init        ctxd_hook/run_hook.py without CLAUDE_PLUGIN_ROOT (what `ctxd init` runs)
  - SessionStart, plugin     startup with a project memory; handed to the installed `ctxd`
                             command's interpreter (one more process, with site)
  - SessionStart, init       the same event answered in process
  - SubagentStart, plugin    a subagent with nothing queued for it, handed over likewise
  - SubagentStart, init      the same event answered in process (standard library only)
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
    parser.add_argument(
        "--ctxd",
        default=str(Path(sys.executable).parent / "ctxd"),
        help="the installed `ctxd` command the plugin hands events to (default: this venv's; "
        "an editable install is started with site, a regular one without)",
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ctxd-bench-plugin-"))
    try:
        plugin = work / "plugin"
        shutil.copytree(REPO / "plugin", plugin, ignore=shutil.ignore_patterns("__pycache__"))
        bin_dir = work / "bin"
        bin_dir.mkdir()
        ctxd = Path(args.ctxd)
        (bin_dir / "ctxd").symlink_to(ctxd)
        project = work / "proj"
        project.mkdir()
        state = project / ".ctxd"
        base = {
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "CLAUDE_PROJECT_DIR": str(project),
            "HOME": str(work / "home"),  # the plugin's bytecode goes to ~/.cache/ctxd
        }
        # A project memory, so that SessionStart(startup) has something to hand back.
        env_cli = {**os.environ, "CTXD_HOME": str(state)}
        subprocess.run([str(ctxd), "emit", "constraint", "never touch billing"], env=env_cli,
                       check=True, stdout=subprocess.DEVNULL)  # fmt: skip
        subprocess.run([str(ctxd), "compact"], env=env_cli, check=True, stdout=subprocess.DEVNULL)
        tool = json.dumps({"session_id": "b-1", "hook_event_name": "PostToolUse",
                           "tool_name": "Read", "tool_input": {"file_path": "/x"}}).encode()  # fmt: skip
        start = json.dumps({"session_id": "b-1", "hook_event_name": "SessionStart",
                            "source": "startup"}).encode()  # fmt: skip
        subagent = json.dumps({"session_id": "b-1", "hook_event_name": "SubagentStart",
                               "agent_id": "a1", "agent_type": "Explore"}).encode()  # fmt: skip
        plugin_hook = [sys.executable, "-I", "-S", str(plugin / "ctxd_hook" / "run_hook.py")]
        init_hook = [sys.executable, "-I", "-S", str(REPO / "plugin" / "ctxd_hook" / "run_hook.py")]
        as_plugin = {**base, "CLAUDE_PLUGIN_ROOT": str(plugin)}
        variants = {
            "python -I -S -c pass": ([sys.executable, "-I", "-S", "-c", "pass"], b"", base),
            "PostToolUse, plugin": (plugin_hook, tool, as_plugin),
            "PostToolUse, init": (init_hook, tool, base),
            "SessionStart, plugin": (plugin_hook, start, as_plugin),
            "SessionStart, init": (init_hook, start, base),
            "SubagentStart, plugin": (plugin_hook, subagent, as_plugin),
            "SubagentStart, init": (init_hook, subagent, base),
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
            print(f"  {name:<24} {value:7.1f} ms  {value / bare:5.2f}x bare start")
        for event in ("PostToolUse", "SessionStart", "SubagentStart"):
            ratio = medians[f"{event}, plugin"] / medians[f"{event}, init"]
            print(f"  {event}: plugin / init = {ratio:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
