"""Daemon lifecycle: `ctxd start`/`stop`, autostart from SessionStart hooks (one daemon), doctor."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import poll, run_cli
from resume_story import Daemons, encode, make_project, project_env, session_start
from subreaper import HookRun, run_hook_as_subreaper

from indexer.daemon import protocol as daemon_channel
from indexer.paths import StatePaths
from indexer.writer.catch_up import is_locked, writer_lock


@pytest.fixture
def daemons() -> Iterator[Daemons]:
    d = Daemons()
    yield d
    d.stop_all()


def daemon_pids(state_dir: Path) -> list[int]:
    """Live `ctxd run` processes for `state_dir` (from /proc; zombies excluded)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if state != "Z" and b"run" in argv and str(state_dir).encode() in argv:
            pids.append(int(entry.name))
    return pids


def _pid(state_dir: Path) -> int:
    try:
        return int(json.loads((state_dir / "daemon.json").read_bytes())["pid"])
    except (OSError, ValueError, KeyError):
        return 0


def test_start_stop(tmp_path: Path, daemons: Daemons) -> None:
    state = tmp_path / ".ctxd"
    done = run_cli("start", state_dir=state)
    pid = _pid(state)
    if pid:
        daemons.adopt(pid)
    # run_cli captures stdout/stderr: it returns only because the daemon does not hold them.
    assert done.returncode == 0 and "started" in done.stdout, done.stderr
    assert is_locked(StatePaths(state)) and daemon_pids(state) == [pid]
    again = run_cli("start", state_dir=state)
    assert again.returncode == 0 and f"already running (pid {pid})" in again.stdout
    status = run_cli("doctor", "--json", state_dir=state)
    checks = {c["name"]: c["status"] for c in json.loads(status.stdout)}
    assert checks["daemon"] == "OK"
    stop = run_cli("stop", state_dir=state)
    assert stop.returncode == 0 and f"stopped (pid {pid})" in stop.stdout
    assert not is_locked(StatePaths(state)) and daemon_pids(state) == []
    assert "no daemon" in run_cli("stop", state_dir=state).stdout


def test_stop_signals_the_daemon_that_answers_never_a_pid_written_in_daemon_json(
    tmp_path: Path, daemons: Daemons
) -> None:
    state = tmp_path / ".ctxd"
    proc = daemons.start(state)
    poll(lambda: daemon_channel.is_listening(state))
    real = json.loads((state / "daemon.json").read_bytes())
    (state / "daemon.json").write_text(json.dumps({**real, "pid": os.getpid()}))
    done = run_cli("stop", state_dir=state)  # this test's own pid is not signalled
    assert done.returncode == 0 and f"daemon stopped (pid {proc.pid})" in done.stdout
    assert proc.wait(timeout=30) == 0


def test_a_lock_holder_that_is_no_daemon_is_not_stopped(tmp_path: Path) -> None:
    # The builder started on PreCompact holds the lock for a while; a daemon.json left by a
    # daemon killed with -9 names a pid that is now another process (this test's).
    state = tmp_path / ".ctxd"
    paths = StatePaths(state)
    (paths.daemon_json.parent).mkdir(mode=0o700)
    paths.daemon_json.write_text(json.dumps({"pid": os.getpid()}))
    with writer_lock(paths):
        done = run_cli("stop", state_dir=state)
        status = run_cli("status", state_dir=state)
    assert done.returncode == 0 and "no daemon is running" in done.stdout, done.stderr
    assert "daemon:      not running" in status.stdout


def test_ten_concurrent_session_starts_autostart_exactly_one_daemon(
    tmp_path: Path, daemons: Daemons
) -> None:
    project = make_project(tmp_path / "app")
    state = project / ".ctxd"
    state.mkdir(mode=0o700)
    (state / "config.toml").write_text("[daemon]\nautostart = true\n")
    payload = encode(session_start(project, "startup"))
    env = project_env(project)

    def one_hook(_: int) -> HookRun:
        # Each hook runs under a subreaper: every process it starts is counted, even one that
        # lost a race and exited at once. A daemon holding the hook's pipes would make the
        # run hit its timeout instead of returning.
        return run_hook_as_subreaper(payload, env, project)

    runs: list[HookRun] = []
    try:
        with ThreadPoolExecutor(10) as pool:
            runs = list(pool.map(one_hook, range(10)))
        assert all(r.returncode == 0 and r.stdout == b"" for r in runs)
        # Exactly one process was ever started by the ten hooks, and it is still running.
        assert sum(r.started for r in runs) == 1, runs
        [pid] = [p for r in runs for p in r.alive]
        assert poll(lambda: _pid(state), 30) == pid
        assert is_locked(StatePaths(state)) and daemon_pids(state) == [pid]
        # A later SessionStart with the daemon running starts nothing.
        later = one_hook(0)
        assert later.returncode == 0 and later.started == 0, later
        assert daemon_pids(state) == [pid]
    finally:
        for p in {*daemon_pids(state), *(p for r in runs for p in r.alive)}:
            daemons.adopt(p)


def test_autostart_off_by_default(tmp_path: Path, daemons: Daemons) -> None:
    project = make_project(tmp_path / "app")
    done = run_hook_as_subreaper(
        encode(session_start(project, "startup")), project_env(project), project
    )
    for pid in done.alive:  # stopped after the test even when it fails
        daemons.adopt(pid)
    assert done.returncode == 0
    # The hook has exited and left no process behind: no daemon can appear later.
    assert (done.alive, done.reaped) == ([], 0)
    assert daemon_pids(project / ".ctxd") == []
    assert not is_locked(StatePaths(project / ".ctxd"))


def test_doctor_reports_missing_hooks_and_broken_paths(tmp_path: Path) -> None:
    project = tmp_path / "app"
    (project / ".claude").mkdir(parents=True)
    state = project / ".ctxd"
    env = {"HOME": str(tmp_path / "home")}
    from helpers import clean_env

    done = run_cli("doctor", cwd=project, env=clean_env(**env))
    assert done.returncode == 1 and "FAIL  hooks" in done.stdout and "ctxd init" in done.stdout
    settings = {
        "hooks": {
            "Stop": [
                {
                    "hooks": [
                        {
                            "type": "command",
                            "command": "/nope/python",
                            "args": ["-I", "-S", "/nope/indexer/hook.py"],
                        }
                    ]
                }
            ]
        }
    }
    (project / ".claude" / "settings.json").write_text(json.dumps(settings))
    done = run_cli("doctor", cwd=project, env=clean_env(**env))
    assert "/nope/python" in done.stdout and done.returncode == 1
    assert not state.exists() or state.is_dir()
