"""Tests for summarizer.daemon.service: `ctxd run` end to end, single instance, signals, heartbeat, log;
and in-process: a dead watchdog observer is restarted, and polling alone still indexes (I7, I8).
"""

from __future__ import annotations

import errno
import functools
import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, avoid_hour_boundary, clean_env, hook_env, payload, poll, run_cli, run_hook

from ctxd_hook.hook import append_line, build_line, segment_name
from indexer.config import Config, DaemonConfig
from indexer.daemon import protocol as daemon_channel
from indexer.paths import StatePaths
from indexer.writer.catch_up import is_locked
from summarizer.daemon import service as daemon_mod
from summarizer.daemon.service import Daemon, SpoolWatcher

RESCAN_S = 1.0
CONFIG = f"""
[daemon]
rescan_interval_s = {RESCAN_S}
heartbeat_interval_s = 0.2
"""


@dataclass
class Running:
    proc: subprocess.Popen[bytes]
    paths: StatePaths
    stderr: Path


def start_daemon(state: Path, log_dir: Path) -> Running:
    paths = StatePaths(state)
    paths.ensure()
    if not paths.config.exists():
        paths.config.write_text(CONFIG)
    env = clean_env(PYTHONPATH=str(REPO))
    stderr = log_dir / f"daemon-{time.monotonic_ns()}.stderr"
    with stderr.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "summarizer.cli.app", "run", "--state-dir", str(state)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            umask=0o022,
        )
    return Running(proc, paths, stderr)


def wait_started(d: Running) -> dict[str, Any]:
    def heartbeat() -> dict[str, Any] | None:
        assert d.proc.poll() is None, d.stderr.read_text()
        try:
            return dict(json.loads(d.paths.daemon_json.read_bytes()))
        except (FileNotFoundError, ValueError):
            return None

    info = poll(heartbeat, timeout=30)
    assert info is not None
    return info


def stop(d: Running) -> None:
    if d.proc.poll() is None:
        d.proc.kill()
        d.proc.wait()


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Running]:
    d = start_daemon(tmp_path / "state", tmp_path)
    try:
        wait_started(d)
        yield d
    finally:
        stop(d)


def indexed(paths: StatePaths, tool_use_id: str) -> bool:
    try:
        conn = sqlite3.connect(f"file:{paths.index_db}?mode=ro", uri=True)
        try:
            row = conn.execute(
                "SELECT 1 FROM entries WHERE tool_use_id=?", (tool_use_id,)
            ).fetchone()
            return row is not None
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return False


# --- ctxd run as a subprocess --------------------------------------------------------------


def test_hook_appends_become_visible_while_running(daemon: Running) -> None:
    avoid_hour_boundary(10)
    # How soon (the latency against rescan_interval_s) is measured in bench/bench_latency.py.
    for n in range(5):
        tool_use_id = f"toolu_live{n}"
        done = run_hook(
            payload(tool_name="Bash", tool_use_id=tool_use_id, tool_input={"command": f"echo {n}"}),
            hook_env(daemon.paths.root),
        )
        assert done.returncode == 0
        poll(functools.partial(indexed, daemon.paths, tool_use_id), timeout=30, interval=0.005)

    # `ctxd read` sees them (it waits for the daemon instead of writing the index itself)
    result = run_cli("read", "--agent-id", "main", "--state-dir", str(daemon.paths.root))
    assert result.returncode == 0, result.stderr
    entries = json.loads(result.stdout)["entries"]
    assert [e["tool_use_id"] for e in entries] == [f"toolu_live{n}" for n in range(5)]
    assert daemon.proc.poll() is None


def test_a_second_daemon_on_the_same_state_dir_exits_with_one_line(
    daemon: Running, tmp_path: Path
) -> None:
    second = start_daemon(daemon.paths.root, tmp_path)
    try:
        code = second.proc.wait(timeout=30)
    finally:
        stop(second)
    assert code != 0
    lines = second.stderr.read_text().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("ctxd run: error: another ctxd daemon is running for ")
    assert str(daemon.paths.root) in lines[0]
    assert daemon.proc.poll() is None  # the first one is untouched
    assert json.loads(daemon.paths.daemon_json.read_bytes())["pid"] == daemon.proc.pid


def test_heartbeat_and_status_while_running(daemon: Running) -> None:
    info = wait_started(daemon)
    assert info["pid"] == daemon.proc.pid
    assert abs(info["started"] - time.time()) < 60
    assert {"heartbeat", "lag_bytes", "lag_lines"} <= set(info)
    first = info["heartbeat"]
    # Written atomically (I11): a reader never sees a missing, empty or half-written file.
    beats = set()

    def beat_again() -> bool:
        beats.add(json.loads(daemon.paths.daemon_json.read_bytes())["heartbeat"])
        return max(beats) > first

    poll(beat_again, timeout=30, interval=0.001)  # beats go on while idle; every read parses
    assert min(beats) >= first
    assert stat.S_IMODE(daemon.paths.daemon_json.stat().st_mode) == 0o600

    result = run_cli("status", "--state-dir", str(daemon.paths.root))
    assert result.returncode == 0, result.stderr
    assert f"daemon:      running (pid {daemon.proc.pid}, up " in result.stdout
    as_json = run_cli("status", "--json", "--state-dir", str(daemon.paths.root))
    assert json.loads(as_json.stdout)["daemon"]["pid"] == daemon.proc.pid


def test_a_removed_socket_is_listened_on_again_at_the_next_heartbeat(daemon: Running) -> None:
    root = daemon.paths.root
    poll(lambda: daemon_channel.is_listening(root), timeout=30)
    (root / daemon_channel.SOCKET_NAME).unlink()  # a cleanup script, say
    assert not daemon_channel.is_listening(root)
    poll(lambda: daemon_channel.is_listening(root), timeout=30)
    done = run_hook(payload(tool_name="Bash", tool_use_id="toolu_relisten"), hook_env(root))
    assert done.returncode == 0
    compacted = run_cli("compact", "--state-dir", str(root))  # asked of the daemon again
    assert compacted.returncode == 0, compacted.stderr
    assert compacted.stdout.startswith("the daemon compacted"), compacted.stdout
    assert "was removed or replaced; listening on a new one" in daemon.paths.log.read_text()


def test_stale_temp_files_are_swept_at_start(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    stale = [
        paths.root / ".daemon.json.4242.tmp",
        paths.sessions / "s-1" / ".main.jsonl.4242.tmp",
        paths.context / ".running-summary.json.4242.tmp",
    ]
    for p in stale:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b'{"half":')
    kept = paths.sessions / "s-1" / "notes.tmp.jsonl"
    kept.write_bytes(b"{}\n")
    d = start_daemon(paths.root, tmp_path)
    try:
        wait_started(d)
        assert not any(p.exists() for p in stale)
        assert kept.exists()
    finally:
        stop(d)


def test_sigterm_finishes_and_releases_everything(daemon: Running) -> None:
    paths = daemon.paths
    assert is_locked(paths)
    daemon.proc.send_signal(signal.SIGTERM)
    assert daemon.proc.wait(timeout=30) == 0, daemon.stderr.read_text()
    assert not paths.daemon_json.exists()
    assert not is_locked(paths)
    status = run_cli("status", "--state-dir", str(paths.root))
    assert "daemon:      not running" in status.stdout
    # the log says why it stopped
    log_text = "".join(p.read_text() for p in paths.root.glob("ctxd.log*"))
    assert "signal 15 received" in log_text
    assert "daemon stopped" in log_text


def test_sigint_also_stops_cleanly(daemon: Running) -> None:
    daemon.proc.send_signal(signal.SIGINT)
    assert daemon.proc.wait(timeout=30) == 0, daemon.stderr.read_text()
    assert not daemon.paths.daemon_json.exists()
    assert not is_locked(daemon.paths)


def test_rotating_log_files_are_private(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    paths.config.write_text(CONFIG + "log_max_bytes = 300\nlog_backups = 2\n")
    daemon = start_daemon(paths.root, tmp_path)
    try:
        wait_started(daemon)
        # Warnings (a quarantined line each) push the 300-byte log over its size, repeatedly.
        for n in range(4):
            bad = b'{"session_id":"../bad","hook_event_name":"Stop"}'
            append_line(
                str(paths.spool), "20200101T00.jsonl", build_line(bad, time.time_ns() + n, 1)
            )
        poll(lambda: len(list(paths.root.glob("ctxd.log*"))) >= 3, timeout=15)
        daemon.proc.send_signal(signal.SIGTERM)
        assert daemon.proc.wait(timeout=30) == 0
    finally:
        stop(daemon)
    logs = sorted(paths.root.glob("ctxd.log*"))
    assert {p.name for p in logs} == {"ctxd.log", "ctxd.log.1", "ctxd.log.2"}  # log_backups = 2
    for p in logs:
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p


# --- in-process: the watcher and the polling fallback --------------------------------------


def _make_file(directory: Path, name: str) -> None:
    (directory / name).write_bytes(b"x\n")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize("part", ["dispatcher", "emitter"])
def test_a_dead_watchdog_observer_is_restarted(tmp_path: Path, part: str) -> None:
    wake = threading.Event()
    watcher = SpoolWatcher(str(tmp_path), wake)
    watcher.start()
    try:
        observer = watcher.observer
        assert observer is not None and not watcher.polling_only
        _make_file(tmp_path, "a.jsonl")
        assert wake.wait(5)
        watcher.check()
        assert watcher.restarts == 0  # healthy: left alone

        def die(*_args: Any) -> None:
            raise RuntimeError("simulated watchdog thread crash (watchdog issue #793)")

        if part == "dispatcher":
            observer.dispatch_events = die  # the next loop iteration raises: the thread ends
            dead = observer
        else:
            [emitter] = list(observer.emitters)
            emitter.queue_events = die
            dead = emitter
        _make_file(tmp_path, "b.jsonl")
        poll(lambda: not dead.is_alive(), timeout=10)

        watcher.check()
        assert watcher.restarts == 1
        assert watcher.observer is not None and watcher.observer is not observer
        assert watcher.observer.is_alive()
        wake.clear()
        _make_file(tmp_path, "c.jsonl")
        assert wake.wait(5), "the restarted observer does not wake the loop"
        watcher.check()
        assert watcher.restarts == 1
    finally:
        watcher.stop()


class _NoInotify:
    """An Observer whose schedule fails as when fs.inotify.max_user_watches is exhausted."""

    def schedule(self, *_args: Any, **_kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "inotify watch limit reached")


def test_polling_alone_still_indexes_within_the_rescan_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import watchdog.observers

    monkeypatch.setattr(watchdog.observers, "Observer", _NoInotify)
    watchers: list[SpoolWatcher] = []

    class Recording(SpoolWatcher):
        def start(self) -> None:
            watchers.append(self)
            super().start()

    monkeypatch.setattr(daemon_mod, "SpoolWatcher", Recording)
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    rescan_s = 0.3
    d = Daemon(
        paths, Config(daemon=DaemonConfig(rescan_interval_s=rescan_s, heartbeat_interval_s=0.1))
    )
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(d.run()), daemon=True)
    thread.start()
    try:
        poll(paths.daemon_json.exists, timeout=30)
        [watcher] = watchers
        assert watcher.polling_only and watcher.observer is None
        assert "watchdog unavailable" in caplog.text
        for n in range(3):
            name = segment_name(time.time_ns())
            line = build_line(
                payload(tool_name="Bash", tool_use_id=f"toolu_poll{n}"), time.time_ns(), 7
            )
            append_line(str(paths.spool), name, line)
            poll(functools.partial(indexed, paths, f"toolu_poll{n}"), timeout=30, interval=0.005)
        watcher.check()  # polling only: nothing to restart
        assert watcher.restarts == 0
    finally:
        d.request_stop()
        thread.join(30)
    assert codes == [0]
    assert not paths.daemon_json.exists()
    assert os.path.exists(paths.lock) and not is_locked(paths)
