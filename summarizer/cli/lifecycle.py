"""Daemon lifecycle: `ctxd start` and `ctxd stop`, never two daemons on one state directory."""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
from pathlib import Path

from indexer import safefs
from indexer.errors import CtxdError
from indexer.paths import StatePaths
from indexer.writer import is_locked
from summarizer.common.cliargs import state_paths
from summarizer.resume.spawn import autostart

__all__ = ["DaemonError", "cmd_start", "cmd_stop", "start_daemon", "stop_daemon"]


class DaemonError(CtxdError):
    """The daemon could not be started or stopped."""


def start_daemon(paths: StatePaths, wait_s: float = 10.0) -> tuple[int, bool]:
    """Start the daemon detached; return (pid, started_now). Never starts a second one."""
    paths.ensure()
    if is_locked(paths):
        return _pid(paths), False
    # A daemon killed with -9 leaves its daemon.json; its pid must not pass for the new one.
    safefs.unlink(paths.root, paths.daemon_json)
    proc = autostart(str(paths.root))
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        pid = _pid(paths)
        if is_locked(paths) and pid:
            return pid, proc is not None and proc.pid == pid
        if proc is not None and proc.poll() is not None:
            raise DaemonError(
                f"the daemon exited at once (status {proc.returncode}); see {paths.log}"
            )
        time.sleep(0.05)
    raise DaemonError(f"the daemon did not start within {wait_s:.0f} s; see {paths.log}")


def stop_daemon(paths: StatePaths, wait_s: float = 10.0) -> int:
    """SIGTERM the daemon holding the lock and wait until it releases it; return its pid (0 if
    none was running)."""
    if not is_locked(paths):
        return 0
    pid = _pid(paths)
    if not pid:
        raise DaemonError(
            f"{paths.lock} is held but {paths.daemon_json} names no pid; find the process "
            f"with `fuser {paths.lock}` and stop it"
        )
    if not _looks_like_daemon(pid):
        raise DaemonError(f"pid {pid} in {paths.daemon_json} is not a ctxd daemon; not signalled")
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + wait_s
    # The lock is released before the interpreter exits: wait for the process too, so that
    # `ctxd stop && ctxd start` never overlaps two daemons' shutdown and startup.
    while is_locked(paths) or _alive(pid):
        if time.monotonic() >= deadline:
            raise DaemonError(f"daemon (pid {pid}) still running after {wait_s:.0f} s; kill {pid}")
        time.sleep(0.05)
    return pid


def cmd_start(args: argparse.Namespace) -> int:
    """Start the daemon in the background."""
    paths = state_paths(args)
    pid, started = start_daemon(paths)
    print(f"daemon {'started' if started else 'already running'} (pid {pid}) for {paths.root}")
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    """Stop the running daemon."""
    paths = state_paths(args)
    pid = stop_daemon(paths, wait_s=float(args.timeout))
    print(f"daemon stopped (pid {pid})" if pid else f"no daemon is running for {paths.root}")
    return 0


def _pid(paths: StatePaths) -> int:
    try:
        info = json.loads(paths.daemon_json.read_bytes())
        return int(info.get("pid") or 0)
    except (OSError, ValueError, AttributeError, TypeError):
        return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (our own unreaped child) has exited
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def _looks_like_daemon(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return not os.path.isdir("/proc")  # no procfs: trust daemon.json
    except OSError:
        return False
    return b"run" in cmdline and any(b"summarizer" in w or b"ctxd" in w for w in cmdline)
