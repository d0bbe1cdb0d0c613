"""SessionStart hook wall time: prebuilt context vs `python -I -c pass`, and the build paths."""

from __future__ import annotations

import argparse
import itertools
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
sys.path.insert(0, str(REPO / "plugin"))

from ctxd_hook import hook  # noqa: E402
from indexer.config import Config  # noqa: E402
from indexer.index.store import connect  # noqa: E402
from indexer.paths import StatePaths  # noqa: E402
from indexer.writer.catch_up import catch_up  # noqa: E402
from summarizer.cli.commands.demo_session import DEMO_SESSION_ID, demo_session  # noqa: E402
from summarizer.resume import writer as resume  # noqa: E402

HOOK = [sys.executable, "-I", "-S", str(REPO / "plugin" / "ctxd_hook" / "run_hook.py")]  # what init installs
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
    parser.add_argument(
        "--flow-runs", type=int, default=10, help="compactions per real-client flow case (>= 5)"
    )
    parser.add_argument(
        "--flow-only", action="store_true", help="only the baseline and the real-client flow"
    )
    parser.add_argument(
        "--compact-s", type=float, default=2.0, help="seconds the model takes to compact"
    )
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

        def rearm() -> None:  # each run is a new compaction: forget the last hand-back
            (folder / "context.md").write_bytes(context)
            (folder / "starts.jsonl").unlink(missing_ok=True)

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
        if not args.flow_only:
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
        flow_runs = max(5, args.flow_runs)
        for daemon in (False, True):
            cases += _real_client_flow(
                root / f"flow-{int(daemon)}", flow_runs, daemon, args.compact_s
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    base = statistics.median(cases[0][1])
    print(f"SessionStart hook wall time, {runs} runs each, {sys.executable}")
    print(f"{'case':<48} {'median ms':>10} {'p95 ms':>8} {'x baseline':>11}")
    for name, times in cases:
        median, p95 = _stats(times)
        print(f"{name:<48} {median * 1e3:>10.1f} {p95 * 1e3:>8.1f} {median / base:>10.2f}x")
    if not args.flow_only:
        prebuilt = statistics.median(cases[1][1]) / base
        verdict = "met" if prebuilt <= 3 else "NOT met"
        print(f"goal: prebuilt <= 3x baseline: {verdict} ({prebuilt:.2f}x)")
    for (_, base_times), (name, times) in itertools.pairwise(cases):
        if name.startswith("flow"):
            ratio = statistics.median(times) / statistics.median(base_times)
            verdict = "met" if ratio <= 3 else "NOT met"
            print(f"goal: {name} <= 3x its interleaved baseline: {verdict} ({ratio:.2f}x)")
    return 0


def _real_client_flow(
    root: Path, runs: int, with_daemon: bool, compact_s: float
) -> list[tuple[str, list[float]]]:
    """Claude Code's order around a compaction, as real hook subprocesses: a prompt, PreCompact,
    the model compacting for `compact_s`, the compaction's own SubagentStop, PostCompact, then
    the timed SessionStart(compact); `python -I -c pass` is timed right after it (interleaved).
    """
    project = _project(root)
    env = _env(project)
    state = project / ".ctxd"
    daemon = None
    if with_daemon:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "summarizer.cli.app", "run", "--state-dir", str(state)],
            env={**env, "PYTHONPATH": str(REPO)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        while not (state / "daemon.json").exists():
            if daemon.poll() is not None:
                raise SystemExit("the daemon did not start")
            time.sleep(0.05)

    def hook_event(name: str, **fields: object) -> None:
        doc = {
            "session_id": SID,
            "transcript_path": "/t.jsonl",
            "cwd": str(project),
            "hook_event_name": name,
            **fields,
        }
        subprocess.run(
            HOOK,
            input=json.dumps(doc).encode(),
            env=env,
            cwd=project,
            check=True,
            capture_output=True,
        )

    tag = "with daemon" if with_daemon else "no daemon"
    hook_times: list[float] = []
    base_times: list[float] = []
    how: list[str] = []
    try:
        for n in range(runs):
            hook_event("UserPromptSubmit", prompt=f"next step {n}")
            hook_event("PreCompact", trigger="auto", custom_instructions="")
            time.sleep(compact_s)  # the model writes its summary meanwhile
            summary = "<analysis>a</analysis><summary>Work goes on.</summary>"
            hook_event(
                "SubagentStop", agent_id=f"a{n:016x}", agent_type="", last_assistant_message=summary
            )
            hook_event("PostCompact", trigger="auto", compact_summary=summary)
            seconds, out = _time(HOOK, _payload(project), env, project)
            if b'"additionalContext"' not in out:
                raise SystemExit(f"flow ({tag}): SessionStart(compact) handed back nothing")
            hook_times.append(seconds)
            base_times.append(_time(BASELINE, b"", env, project)[0])
            log = (state / "resume" / SID / "starts.jsonl").read_text().splitlines()[-1]
            how.append("prebuilt" if "(prebuilt)" in log else "built")
    finally:
        if daemon is not None:
            daemon.terminate()
            daemon.wait(timeout=30)
    print(
        f"flow ({tag}): SessionStart(compact) took the prebuilt path in "
        f"{how.count('prebuilt')} of {runs} compactions"
    )
    return [
        (f"python -I -c pass (interleaved, {tag})", base_times),
        (f"flow, SessionStart(compact) {tag}", hook_times),
    ]


if __name__ == "__main__":
    sys.exit(main())
