"""Hook wall time per invocation (median, p95) vs a bare interpreter start in the same run.

Four ways to run the hook are measured, each a real process fed a realistic payload on stdin:
  - `python -I -S ctxd_hook/run_hook.py`  what `ctxd init` installs (exec form, no site import;
                                        it imports the hook from its cached bytecode);
  - `python -I -S ctxd_hook/hook.py`      the hook run as a script, compiled on every run (what
                                        earlier versions installed: the baseline of that change);
  - `python -I -S indexer/run_hook.py`    the launcher an earlier version installed, now a
                                        stand-in that runs ctxd_hook/run_hook.py by its path;
  - `ctxd-hook`                           the console script (site-packages, entry-point wrapper);
each against the bare start that matches it, with the same interpreter: `python -I -S -c pass`
for the first (no site import either: like for like) and `python -c pass` for the console
script (whose interpreter imports site, the editable-install finder included). The hook is
also shown against `python -I -c pass`, labelled: that start imports site, which the hook
does not, so that ratio flatters the hook. Every round runs all commands in a fresh random
order (interleaved, no order effect); the ratio is of medians.

The recall at the moment of action is measured the same way: `run_hook.py` fed a PreToolUse
of an Edit, with the session's recall table holding 60 items (what the daemon writes for a
project with history), once for a file the table names (a hit: the hook prints its lines; the
session's record of what it was shown is removed between runs, outside the timing, so every
run is a first hit) and once for a file it does not name (no hit: nothing printed).

    python bench/bench_hook.py [--runs 200]
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
sys.path.insert(0, str(REPO))

from summarizer.cli.commands.demo_session import demo_session  # noqa: E402


def timed(argv: list[str], stdin: bytes, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, input=stdin, env=env, stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1000


SID = "bench-recall-0001"


def recall_state(root: Path) -> Path:
    """A state dir whose session has a recall table of 60 items, as the daemon writes it."""
    from ctxd_hook.recall import row_id

    table = root / "recall"
    table.mkdir(parents=True, mode=0o700)
    root.chmod(0o700)
    rows = []
    for i in range(40):
        key = f"src/module_{i:02d}.py"
        rows.append(f"{row_id('failure', 'file', key)}\tfile\t{key}\tEdit `{key}` failed and "
                    f'printed: "String to replace not found in file."; not resolved as of 10:02 UTC')
    for i in range(20):
        key = f"npm run task{i}"
        rows.append(f"{row_id('failure', 'cmd', key)}\tcmd\t{key}\tBash `{key}` failed (exit 1)"
                    ' and printed: "Error: boom"; not resolved as of 10:02 UTC')
    (table / f"{SID}.tsv").write_text("\n".join(rows) + "\n")
    return root


def edit_payload(path: str) -> bytes:
    return json.dumps({
        "session_id": SID, "transcript_path": f"/home/dev/.claude/projects/p/{SID}.jsonl",
        "cwd": "/home/dev/project", "permission_mode": "default",
        "hook_event_name": "PreToolUse", "tool_name": "Edit",
        "tool_input": {"file_path": f"/home/dev/project/{path}", "old_string": "x = 1",
                       "new_string": "x = 2"},
        "tool_use_id": "toolu_01BenchRecall",
    }).encode()  # fmt: skip


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    payload = json.dumps(demo_session("/home/dev/project")[10]).encode()  # a PostToolUse Read
    hook_name = "python -I -S ctxd_hook/run_hook.py"
    script_name = "python -I -S ctxd_hook/hook.py"
    earlier_name = "python -I -S indexer/run_hook.py (earlier install)"
    console_name = "ctxd-hook (console script)"
    variants: dict[str, list[str]] = {
        "python -I -S -c pass": [sys.executable, "-I", "-S", "-c", "pass"],
        "python -I -c pass": [sys.executable, "-I", "-c", "pass"],
        "python -c pass": [sys.executable, "-c", "pass"],
        hook_name: [sys.executable, "-I", "-S", str(REPO / "plugin" / "ctxd_hook" / "run_hook.py")],
        script_name: [sys.executable, "-I", "-S", str(REPO / "plugin" / "ctxd_hook" / "hook.py")],
        earlier_name: [sys.executable, "-I", "-S", str(REPO / "indexer" / "run_hook.py")],
    }
    console = shutil.which("ctxd-hook", path=str(Path(sys.executable).parent))
    if console:
        variants[console_name] = [console]
    # (measured, baseline, label): like for like first; the -I comparison only for reference.
    comparisons = [
        (hook_name, "python -I -S -c pass", "like for like"),
        (script_name, "python -I -S -c pass", "like for like: the hook compiled on every run"),
        (earlier_name, "python -I -S -c pass", "like for like: through the stand-in"),
        (hook_name, "python -I -c pass", "baseline imports site: flatters the hook"),
    ]
    if console:
        comparisons.append((console_name, "python -c pass", "like for like"))
    hit_name, miss_name = "PreToolUse Edit, recall hit", "PreToolUse Edit, no recall hit"
    comparisons += [
        (hit_name, "python -I -S -c pass", "like for like: prints the file's history"),
        (miss_name, "python -I -S -c pass", "like for like: the file has no history"),
    ]
    rng = random.Random(15)
    with tempfile.TemporaryDirectory() as tmp:
        env = {"CTXD_HOME": str(Path(tmp) / "state"), "PATH": os.environ.get("PATH", "")}
        recall_env = {**env, "CTXD_HOME": str(recall_state(Path(tmp) / "recall-state"))}
        shown = Path(recall_env["CTXD_HOME"]) / "recall" / f"{SID}.shown"
        runs: dict[str, tuple[list[str], bytes, dict[str, str]]] = {
            name: (argv, payload, env) for name, argv in variants.items()
        }
        runs[hit_name] = (variants[hook_name], edit_payload("src/module_07.py"), recall_env)
        runs[miss_name] = (variants[hook_name], edit_payload("src/other.py"), recall_env)
        for argv, stdin, run_env in runs.values():  # warm the page cache
            timed(argv, stdin, run_env)
        samples: dict[str, list[float]] = {name: [] for name in runs}
        names = list(runs)
        for _ in range(args.runs):
            rng.shuffle(names)
            for name in names:
                shown.unlink(missing_ok=True)  # every hit is the session's first
                argv, stdin, run_env = runs[name]
                samples[name].append(timed(argv, stdin, run_env))
        written = sum(
            p.read_bytes().count(b"\n") for p in (Path(tmp) / "state" / "spool").glob("*.jsonl")
        )
        shown.unlink(missing_ok=True)
        argv, stdin, run_env = runs[hit_name]
        out = subprocess.run(argv, input=stdin, env=run_env, capture_output=True, check=True)
        assert b"additionalContext" in out.stdout, "the recall hit printed nothing"
        argv, stdin, run_env = runs[miss_name]
        out = subprocess.run(argv, input=stdin, env=run_env, capture_output=True, check=True)
        assert out.stdout == b"", "a file without history printed something"
    print(f"{args.runs} runs each, payload {len(payload)} bytes, {written} spool lines written")
    for name, values in samples.items():
        median, p95 = summary(values)
        print(f"{name:32s} median {median:6.2f} ms  p95 {p95:6.2f} ms")
    for name, base, label in comparisons:
        (median, p95), (b_median, b_p95) = summary(samples[name]), summary(samples[base])
        print(
            f"{name} / {base}: {median / b_median:4.2f}x median, {p95 / b_p95:4.2f}x p95  ({label})"
        )
    print("goal: the hook <= 1.25x `python -I -S -c pass` (like for like); PreToolUse with and"
          " without a recall hit <= 1.3x")  # fmt: skip


if __name__ == "__main__":
    main()
