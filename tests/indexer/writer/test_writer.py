"""indexer/writer/catch_up.py: the exclusive writer lock, catch-up with and without a lock holder, and
with a daemon (what answers on the state dir's socket, not merely what holds the lock)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import hook_env, payload, run_hook

from indexer.daemon import protocol as daemon_channel
from indexer.errors import IndexBusyError
from indexer.paths import StatePaths
from indexer.writer.catch_up import (
    catch_up,
    daemon_running,
    daemon_writer_lock,
    is_locked,
    lag,
    open_writer,
    writer_lock,
)

SID = "0f6a6c8e-1b2d-4c3e-9f40-5a6b7c8d9e01"  # the session of helpers.payload()

# A child that takes daemon.lock the way the daemon does, says so, and keeps it until stdin closes.
_HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def paths(tmp_path: Path) -> StatePaths:
    p = StatePaths(tmp_path / "state")
    p.ensure()
    return p


@pytest.fixture
def holder(paths: StatePaths) -> Iterator[subprocess.Popen[str]]:
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(paths.lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdout is not None and child.stdout.readline() == "held\n"
        yield child
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=30)


def _hook(paths: StatePaths, **fields: object) -> None:
    result = run_hook(payload(**fields), hook_env(paths.root))
    assert result.returncode == 0, result.stderr


def test_writer_lock_is_exclusive_and_released(paths: StatePaths) -> None:
    assert not is_locked(paths)
    with writer_lock(paths) as fd:
        assert fd >= 0
        assert is_locked(paths)
        with pytest.raises(IndexBusyError, match="held by another ctxd process"):  # noqa: SIM117
            with writer_lock(paths, wait_s=0.0):
                pass
    assert not is_locked(paths)
    assert oct(os.stat(paths.lock).st_mode & 0o777) == "0o600"


def test_a_lock_held_by_another_process_is_seen(
    paths: StatePaths, holder: subprocess.Popen[str]
) -> None:
    assert is_locked(paths)
    with pytest.raises(IndexBusyError), writer_lock(paths, wait_s=0.0):
        pass


def test_catch_up_without_a_daemon_indexes_the_spool(paths: StatePaths) -> None:
    _hook(paths, hook_event_name="UserPromptSubmit", prompt="Add a login page")
    _hook(paths, hook_event_name="PreToolUse", tool_name="Read", tool_use_id="t1",
          tool_input={"file_path": "/home/dev/app/a.py"})  # fmt: skip
    _hook(paths, hook_event_name="Stop", last_assistant_message="Done")
    result = catch_up(paths)
    assert result.by_daemon is False
    assert result.caught_up is True
    assert result.stats.lines == 3
    assert result.stats.entries == 3
    assert result.stats.quarantined == 0
    assert not is_locked(paths)  # the lock was taken only for the catch-up
    writer = open_writer(paths)
    try:
        assert lag(writer.conn, paths.spool) == (0, 0)
        events = [r[0] for r in writer.conn.execute("SELECT event FROM entries ORDER BY id")]
        assert events == ["prompt", "tool_use", "stop"]
    finally:
        writer.close()
    view = paths.session_dir(SID) / "main.jsonl"
    assert len(view.read_bytes().splitlines()) == 3
    again = catch_up(paths)
    assert (again.by_daemon, again.caught_up, again.stats.lines) == (False, True, 0)


def test_lag_counts_what_is_not_indexed_yet(paths: StatePaths) -> None:
    catch_up(paths)
    _hook(paths, hook_event_name="Stop", last_assistant_message="one")
    _hook(paths, hook_event_name="Stop", last_assistant_message="two")
    writer = open_writer(paths)
    try:
        behind_bytes, behind_lines = lag(writer.conn, paths.spool)
    finally:
        writer.close()
    assert behind_lines == 2
    assert behind_bytes > 0


def test_a_lock_holder_that_is_no_daemon_is_waited_for_within_the_time_given(
    paths: StatePaths, holder: subprocess.Popen[str]
) -> None:
    assert not daemon_running(paths)  # the lock alone is no daemon
    empty = catch_up(paths, wait_s=0.0)
    assert (empty.by_daemon, empty.caught_up) == (False, True)  # nothing to wait for
    _hook(paths, hook_event_name="Stop", last_assistant_message="waiting")
    behind = catch_up(paths, wait_s=0.0)
    assert behind.by_daemon is False
    assert behind.caught_up is False  # the holder never indexes: the caller is told so
    assert behind.stats.lines == 0
    assert not paths.index_db.exists()


def test_once_a_holder_that_is_no_daemon_lets_go_catch_up_indexes_itself(
    paths: StatePaths, holder: subprocess.Popen[str]
) -> None:
    _hook(paths, hook_event_name="Stop", last_assistant_message="waiting")
    assert holder.stdin is not None
    holder.stdin.close()  # the builder is done: it lets go of the lock
    result = catch_up(paths, wait_s=60.0)
    assert (result.by_daemon, result.caught_up, result.stats.entries) == (False, True, 1)


def test_with_a_daemon_listening_catch_up_waits_for_it(
    paths: StatePaths, holder: subprocess.Popen[str]
) -> None:
    listener = daemon_channel.listen(paths.root)  # the holder, now with a daemon's socket
    try:
        assert daemon_running(paths)
        _hook(paths, hook_event_name="Stop", last_assistant_message="waiting")
        behind = catch_up(paths, wait_s=0.0)
        assert (behind.by_daemon, behind.caught_up, behind.stats.lines) == (True, False, 0)
        refused = pytest.raises(IndexBusyError, match="another ctxd daemon is running for ")
        with refused, daemon_writer_lock(paths, wait_s=60.0):  # a second daemon: at once
            pass
    finally:
        daemon_channel.close_listener(paths.root, listener)
    assert not daemon_running(paths) and not (paths.root / daemon_channel.SOCKET_NAME).exists()


def test_a_daemon_waits_for_a_holder_that_is_no_daemon_and_says_so_past_its_wait(
    paths: StatePaths, holder: subprocess.Popen[str]
) -> None:
    refused = pytest.raises(IndexBusyError, match=r"another ctxd process \(not a daemon\)")
    with refused, daemon_writer_lock(paths, wait_s=0.0):
        pass


def test_index_replaced_reports_a_deleted_or_replaced_file(paths: StatePaths) -> None:
    writer = open_writer(paths)
    try:
        assert writer.index_replaced() == ""
        paths.index_db.rename(paths.root / "moved.db")
        assert writer.index_replaced() == f"{paths.index_db} was deleted"
        paths.index_db.write_bytes(b"")
        assert writer.index_replaced() == f"{paths.index_db} was replaced by another file"
    finally:
        writer.close()


@pytest.fixture
def indexed(paths: StatePaths) -> None:
    """An index holding one entry, made before any lock holder starts."""
    _hook(paths, hook_event_name="Stop", last_assistant_message="first")
    assert catch_up(paths).stats.entries == 1


def test_with_a_lock_holder_an_index_level_with_the_spool_is_caught_up(
    indexed: None, paths: StatePaths, holder: subprocess.Popen[str]
) -> None:
    result = catch_up(paths, wait_s=0.0)
    assert (result.by_daemon, result.caught_up) == (False, True)


def test_with_a_lock_holder_an_index_behind_the_spool_is_not_caught_up(
    indexed: None, paths: StatePaths, holder: subprocess.Popen[str]
) -> None:
    _hook(paths, hook_event_name="Stop", last_assistant_message="second")
    result = catch_up(paths, wait_s=0.0)
    assert (result.by_daemon, result.caught_up) == (False, False)
