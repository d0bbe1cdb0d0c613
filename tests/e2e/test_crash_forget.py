"""SIGKILL `ctxd forget` at random moments while it rewrites spool segments.

After each kill, running forget again (and the next ingest) must leave no line of the
forgotten session in the spool, every other session's entries in the index exactly once, and
a spool that a rebuild from scratch turns into those same entries (I3, I5).
"""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers import REPO, hook_env, payload, query, spool_lines

from ctxd_hook import hook

GONE, KEPT, ALSO = "crash-gone", "crash-kept", "crash-also"
HOUR_NS = 3600 * 10**9
LINES = 6000


def _env() -> dict[str, str]:
    env = hook_env("/nonexistent")  # --state-dir overrides CTXD_HOME
    env["PYTHONPATH"] = str(REPO)
    return env


def _cli(*args: str, state: Path) -> list[str]:
    return [sys.executable, "-m", "summarizer.cli.app", *args, "--state-dir", str(state)]


def _run(*args: str, state: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _cli(*args, state=state), env=_env(), capture_output=True, text=True, check=False
    )


def _entries(state: Path) -> dict[str, list[tuple[int, int, str]]]:
    out: dict[str, list[tuple[int, int, str]]] = {}
    for session, ts_ns, pid, text in query(
        state, "SELECT session_id, ts_ns, pid, text FROM entries ORDER BY ts_ns, pid"
    ):
        out.setdefault(session, []).append((ts_ns, pid, text))
    return out


def _project(state: Path) -> None:
    spool = state / "spool"
    spool.mkdir(parents=True, mode=0o700)
    base = time.time_ns() - 3 * HOUR_NS  # three past hours, the sessions interleaved
    for n in range(LINES):
        ts = base + n * (2 * HOUR_NS // LINES)
        data = payload(
            session_id=(GONE, KEPT, ALSO)[n % 3],
            hook_event_name="UserPromptSubmit",
            prompt=f"line-{n:05d} " + "z" * 400,
        )
        hook.append_line(str(spool), hook.segment_name(ts), hook.build_line(data, ts, 77))


def _copy(pristine: Path, state: Path) -> Path:
    """A copy of the project, its index level with the copied segments: copies are new
    inodes, which the first ingest reads again as replaced files (the ids absorb them)."""
    shutil.copytree(pristine, state)
    done = _run("ingest", state=state)
    assert done.returncode == 0 and "; 6000 duplicates," in done.stdout, done.stdout
    return state


def test_forget_killed_anywhere_then_run_again_loses_and_doubles_nothing(tmp_path: Path) -> None:
    pristine = tmp_path / "pristine"
    _project(pristine)
    assert _run("ingest", state=pristine).returncode == 0
    before = _entries(pristine)
    assert [len(before[s]) for s in (GONE, KEPT, ALSO)] == [LINES // 3] * 3

    full = _copy(pristine, tmp_path / "full")
    t0 = time.monotonic()
    assert _run("forget", GONE, state=full).returncode == 0
    whole_run_s = time.monotonic() - t0

    rng = random.Random(20261202)
    killed = 0
    for trial in range(6):
        state = _copy(pristine, tmp_path / f"trial-{trial}")
        proc = subprocess.Popen(
            _cli("forget", GONE, state=state),
            env=_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            proc.wait(timeout=rng.uniform(0.3, 1.0) * whole_run_s)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        err = proc.stderr.read().decode() if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
        assert proc.returncode in (0, -signal.SIGKILL), err
        killed += proc.returncode == -signal.SIGKILL

        again = _run("forget", GONE, state=state)
        assert again.returncode == 0 or "no session" in again.stderr, again.stderr
        assert _run("ingest", state=state).returncode == 0
        assert not [x for x in spool_lines(state) if GONE.encode() in x], f"trial {trial}"
        after = _entries(state)
        assert GONE not in after
        assert after[KEPT] == before[KEPT] and after[ALSO] == before[ALSO], f"trial {trial}"
        assert not list((state / "spool").glob(".*")), "a temporary file was left behind"

        # The recovery of a damaged index: the spool alone gives the same entries back.
        for suffix in ("", "-wal", "-shm"):
            Path(f"{state / 'index.db'}{suffix}").unlink(missing_ok=True)
        assert _run("rebuild", state=state).returncode == 0
        rebuilt = _entries(state)
        assert set(rebuilt) == {KEPT, ALSO}
        assert rebuilt[KEPT] == before[KEPT] and rebuilt[ALSO] == before[ALSO]
    assert killed >= 3  # most trials were cut short
