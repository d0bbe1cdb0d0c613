"""`ctxd start` reports a daemon that dies while starting; `ctxd stop` ends one that does not stop.

`ctxd start` once printed "daemon started" as soon as the new process held the writer lock,
though it died a moment later (an import error), and its log said only "daemon stopped".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from helpers import REPO, clean_env, poll, run_cli

from indexer.daemon import protocol as daemon_channel
from indexer.paths import StatePaths
from indexer.writer.catch_up import is_locked


def _ctxd(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "summarizer.cli.app", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_start_reports_a_daemon_that_dies_while_starting_with_its_logged_error(
    tmp_path: Path,
) -> None:
    # A broken install: the scheduler package the daemon imports once it holds the index.
    broken = tmp_path / "broken" / "apscheduler"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text('raise ImportError("apscheduler is broken here")\n')
    state = tmp_path / "state"
    env = clean_env(PYTHONPATH=f"{REPO}{os.pathsep}{broken.parent}")
    done = _ctxd("start", "--state-dir", str(state), env=env)
    assert done.returncode == 1, done.stdout
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("ctxd start: error: the daemon exited at once (status 1): "), line
    assert "ImportError: apscheduler is broken here" in line
    assert line.endswith(f"see {state / 'ctxd.log'}")
    log = (state / "ctxd.log").read_text()
    assert "the daemon stopped on an error: ImportError" in log
    assert "Traceback (most recent call last)" in log  # where, for whoever reads the log
    assert not is_locked(StatePaths(state))
    assert not daemon_channel.is_listening(state)


def test_start_reports_a_config_error_the_daemon_logged(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "config.toml").write_text("[daemon]\nrescan_interval_s = 0\n")
    done = run_cli("start", state_dir=state)
    assert done.returncode == 1
    assert "rescan_interval_s must be > 0" in done.stderr
    assert "the daemon cannot start" in (state / "ctxd.log").read_text()


def test_start_waits_until_the_daemon_answers(tmp_path: Path) -> None:
    state = tmp_path / "state"
    done = run_cli("start", state_dir=state)
    try:
        assert done.returncode == 0, done.stderr
        pid = int(done.stdout.split("(pid ")[1].split(")")[0])
        # Started means serving: its jobs are up, a request is answered at once.
        sock = daemon_channel.connect(state, 5)
        assert sock is not None
        daemon_channel.send(sock, {"op": "ping"})
        assert daemon_channel.receive(sock, 5) == {
            "ok": True,
            "pid": pid,
            "started": json.loads((state / "daemon.json").read_bytes())["started"],
        }
        sock.close()
    finally:
        run_cli("stop", state_dir=state)


def test_stop_kills_a_daemon_that_does_not_stop_in_time(tmp_path: Path) -> None:
    state = tmp_path / "state"
    started = run_cli("start", state_dir=state)
    assert started.returncode == 0, started.stderr
    pid = int(json.loads((state / "daemon.json").read_bytes())["pid"])
    os.kill(pid, signal.SIGSTOP)  # a daemon that neither answers nor handles SIGTERM
    try:
        done = run_cli("stop", "--timeout", "1", state_dir=state)
    finally:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"daemon killed (pid {pid})\n"
    assert done.stderr.startswith(
        f"ctxd stop: the daemon (pid {pid}) did not stop within 1 s of SIGTERM; killed it"
    )
    # Once stop returns the daemon is gone with all its threads: its lock is free at once
    # (a killed daemon's main thread is a zombie while its other threads still hold the lock).
    assert not is_locked(StatePaths(state))
    poll(lambda: not Path(f"/proc/{pid}").exists() or _zombie(pid))
    again = run_cli("start", state_dir=state)  # nothing is left in the way of the next one
    try:
        assert again.returncode == 0 and "daemon started" in again.stdout, again.stderr
    finally:
        run_cli("stop", state_dir=state)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z"
    except OSError:
        return True
