"""Hook wall time per invocation (median, p95) vs a bare `python -I -c pass` in the same run.

Three ways to run the hook are measured, each a real process fed a realistic payload on stdin:
  - `python -I -S indexer/hook.py`   what `ctxd init` installs (exec form, no site import);
  - `ctxd-hook`                      the console script (site-packages, entry-point wrapper);
against the baseline `python -I -c pass` with the same interpreter. Runs are interleaved so
machine noise hits all variants alike.

    python bench/bench_hook.py [--runs 200]
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

from summarizer.demo_session import demo_session  # noqa: E402


def timed(argv: list[str], stdin: bytes, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, input=stdin, env=env, stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1000


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    payload = json.dumps(demo_session("/home/dev/project")[10]).encode()  # a PostToolUse Read
    variants: dict[str, list[str]] = {
        "python -I -c pass (baseline)": [sys.executable, "-I", "-c", "pass"],
        "python -I -S indexer/hook.py": [
            sys.executable,
            "-I",
            "-S",
            str(REPO / "indexer" / "hook.py"),
        ],
    }
    console = shutil.which("ctxd-hook", path=str(Path(sys.executable).parent))
    if console:
        variants["ctxd-hook (console script)"] = [console]
    with tempfile.TemporaryDirectory() as tmp:
        env = {"CTXD_HOME": str(Path(tmp) / "state"), "PATH": os.environ.get("PATH", "")}
        for argv in variants.values():  # warm the page cache
            timed(argv, payload, env)
        samples: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.runs):
            for name, argv in variants.items():
                samples[name].append(timed(argv, payload, env))
        written = sum(
            p.read_bytes().count(b"\n") for p in (Path(tmp) / "state" / "spool").glob("*.jsonl")
        )
    base_median, base_p95 = summary(samples["python -I -c pass (baseline)"])
    print(f"{args.runs} runs each, payload {len(payload)} bytes, {written} spool lines written")
    for name, values in samples.items():
        median, p95 = summary(values)
        print(
            f"{name:32s} median {median:6.2f} ms  p95 {p95:6.2f} ms  "
            f"ratio {median / base_median:4.2f}x (p95 {p95 / base_p95:4.2f}x)"
        )
    print("goal: hook <= 1.25x the baseline")


if __name__ == "__main__":
    main()
