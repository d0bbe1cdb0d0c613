"""SessionStart hook wall time: prebuilt context vs `python -I -c pass`, and the build paths."""

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
BASELINE = [sys.executable, "-I", "-c", "pass"]
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


def _measure(
    runs: int,
    once: Callable[[], tuple[float, bytes]],
    prepare: Callable[[], None] = lambda: None,
    check: Callable[[bytes], bool] = lambda out: True,
) -> list[float]:
    times = []
    for _ in range(runs):
        prepare()
        seconds, out = once()
        if not check(out):
            raise SystemExit(f"unexpected hook output: {out[:200]!r}")
        times.append(seconds)
    return times


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
        context = (folder / "context.md").read_bytes()
        state = (folder / "precompact_state.json").read_bytes()
        has_output: Callable[[bytes], bool] = lambda out: b'"additionalContext"' in out  # noqa: E731

        def rearm() -> None:  # the context is consumed by every run: put it back
            (folder / "context.md").write_bytes(context)

        def unbuilt() -> None:  # no prebuilt state: the hook builds it from the index
            shutil.rmtree(folder, ignore_errors=True)

        def cold() -> None:  # nothing indexed at all: the hook ingests the spool, then builds
            shutil.rmtree(paths.root, ignore_errors=True)
            paths.root.mkdir(mode=0o700)
            shutil.copytree(spool_copy, paths.spool)

        cases: list[tuple[str, list[float]]] = []
        cases.append(
            ("python -I -c pass", _measure(runs, lambda: _time(BASELINE, b"", env, project)))
        )
        payload = _payload(project)
        cases.append(
            (
                "hook, prebuilt context",
                _measure(runs, lambda: _time(HOOK, payload, env, project), rearm, has_output),
            )
        )
        cases.append(
            (
                "hook, SessionStart startup (nothing to inject)",
                _measure(runs, lambda: _time(HOOK, _payload(project, "startup"), env, project)),
            )
        )
        cases.append(
            (
                "hook, build path (index current)",
                _measure(runs, lambda: _time(HOOK, payload, env, project), unbuilt, has_output),
            )
        )
        cases.append(
            (
                "hook, build path (spool only, no index)",
                _measure(runs, lambda: _time(HOOK, payload, env, project), cold, has_output),
            )
        )
        (folder / "precompact_state.json").write_bytes(state)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    base = statistics.median(cases[0][1])
    print(f"SessionStart hook wall time, {runs} runs each, {sys.executable}")
    print(f"{'case':<48} {'median ms':>10} {'p95 ms':>8} {'x baseline':>11}")
    for name, times in cases:
        median, p95 = _stats(times)
        print(f"{name:<48} {median * 1e3:>10.1f} {p95 * 1e3:>8.1f} {median / base:>10.2f}x")
    prebuilt = statistics.median(cases[1][1]) / base
    print(
        f"goal: prebuilt <= 3x baseline: {'met' if prebuilt <= 3 else 'NOT met'} ({prebuilt:.2f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
