"""SessionStart hook wall time: prebuilt context and the build paths vs a bare interpreter start.

The hook runs as installed, `python -I -S indexer/hook.py`; the like-for-like baseline is
`python -I -S -c pass` (no site import either: the hook imports site itself only when it has
context to build or print). `python -I -c pass` is shown too, labelled: it imports site. All
cases run interleaved, every round in a fresh random order, each from its own prepared state
(restored before the run, outside the timed part).

    python bench/bench_session_start.py [--runs 40]
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
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from indexer import hook  # noqa: E402
from indexer.config import Config  # noqa: E402
from indexer.paths import StatePaths  # noqa: E402
from indexer.store import connect  # noqa: E402
from indexer.writer import catch_up  # noqa: E402
from summarizer import resume  # noqa: E402
from summarizer.demo_session import DEMO_SESSION_ID, demo_session  # noqa: E402

HOOK = [sys.executable, "-I", "-S", str(REPO / "indexer" / "hook.py")]
BASELINE = [sys.executable, "-I", "-S", "-c", "pass"]
BASELINE_SITE = [sys.executable, "-I", "-c", "pass"]
SID = DEMO_SESSION_ID
_ENV_DROP = ("CTXD_HOME", "CLAUDE_PROJECT_DIR", "PYTHONPATH")


def _env(project: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _ENV_DROP}
    env["CLAUDE_PROJECT_DIR"] = str(project)
    return env


def _payload(project: Path, source: str = "compact") -> bytes:
    return json.dumps(
        {
            "session_id": SID,
            "transcript_path": "/t.jsonl",
            "cwd": str(project),
            "hook_event_name": "SessionStart",
            "source": source,
        }
    ).encode()


def _project(root: Path) -> Path:
    """A project whose spool holds the demo session (files on disk so files_to_load is full)."""
    project = root / "app"
    for name in ("src/reports.py", "src/export.py", "web/reports.html"):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text("x\n")
    env = {"CLAUDE_PROJECT_DIR": str(project)}
    for p in demo_session(str(project)):
        hook.run(json.dumps(p).encode(), env, str(project))
    return project


def _time(argv: list[str], stdin: bytes, env: dict[str, str], cwd: Path) -> tuple[float, bytes]:
    t = time.perf_counter()
    done = subprocess.run(argv, input=stdin, env=env, cwd=cwd, capture_output=True, check=True)
    return time.perf_counter() - t, done.stdout


def _stats(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=40, help="runs per case (>= 30)")
    args = parser.parse_args()
    runs = max(30, args.runs)
    root = Path(tempfile.mkdtemp(prefix="ctxd-bench-"))
    try:
        project = _project(root)
        paths = StatePaths(project / ".ctxd")
        env = _env(project)
        spool_copy = root / "spool-copy"
        shutil.copytree(paths.spool, spool_copy)
        catch_up(paths)
        conn = connect(paths.index_db)
        try:
            resume.update_session(conn, paths, Config(), SID, "pre_compact")
        finally:
            conn.close()
        folder = paths.resume / SID
        built = root / "state-built"  # index current, context prebuilt
        shutil.copytree(paths.root, built)
        has_output: Callable[[bytes], bool] = lambda out: b'"additionalContext"' in out  # noqa: E731
        anything: Callable[[bytes], bool] = lambda out: True  # noqa: E731

        def restore() -> None:  # the context is consumed by every run: put the state back
            shutil.rmtree(paths.root, ignore_errors=True)
            shutil.copytree(built, paths.root)

        def unbuilt() -> None:  # no prebuilt state: the hook builds it from the index
            restore()
            shutil.rmtree(folder, ignore_errors=True)

        def cold() -> None:  # nothing indexed at all: the hook ingests the spool, then builds
            shutil.rmtree(paths.root, ignore_errors=True)
            paths.root.mkdir(mode=0o700)
            shutil.copytree(spool_copy, paths.spool)

        payload = _payload(project)
        # (name, prepare, argv, stdin, check of the output)
        cases: list[tuple[str, Callable[[], None], list[str], bytes, Callable[[bytes], bool]]] = [
            ("python -I -S -c pass (like for like)", restore, BASELINE, b"", anything),
            ("python -I -c pass (imports site)", restore, BASELINE_SITE, b"", anything),
            ("hook, prebuilt context", restore, HOOK, payload, has_output),
            (
                "hook, SessionStart startup (nothing to inject)",
                restore,
                HOOK,
                _payload(project, "startup"),
                anything,
            ),
            ("hook, build path (index current)", unbuilt, HOOK, payload, has_output),
            ("hook, build path (spool only, no index)", cold, HOOK, payload, has_output),
        ]
        times: dict[str, list[float]] = {c[0]: [] for c in cases}
        rng = random.Random(15)
        order = list(cases)
        for _ in range(runs):
            rng.shuffle(order)
            for name, prepare, argv, stdin, check in order:
                prepare()
                seconds, out = _time(argv, stdin, env, project)
                if not check(out):
                    raise SystemExit(f"{name}: unexpected hook output: {out[:200]!r}")
                times[name].append(seconds)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    base = statistics.median(times[cases[0][0]])
    base_site = statistics.median(times[cases[1][0]])
    print(f"SessionStart hook wall time, {runs} runs each (interleaved), {sys.executable}")
    print(f"{'case':<48} {'median ms':>10} {'p95 ms':>8} {'x -I -S':>8} {'x -I':>6}")
    for name, *_ in cases:
        median, p95 = _stats(times[name])
        print(
            f"{name:<48} {median * 1e3:>10.1f} {p95 * 1e3:>8.1f} "
            f"{median / base:>7.2f}x {median / base_site:>5.2f}x"
        )
    prebuilt = statistics.median(times["hook, prebuilt context"]) / base
    print(
        "goal: prebuilt <= 3x `python -I -S -c pass`: "
        f"{'met' if prebuilt <= 3 else 'NOT met'} ({prebuilt:.2f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
