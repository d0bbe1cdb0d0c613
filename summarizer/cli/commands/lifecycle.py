"""Daemon lifecycle: `ctxd start` and `ctxd stop`, never two daemons on one state directory.

A daemon is what answers on the state dir's socket (indexer.daemon.protocol): the writer lock is
also held, for a while, by commands and by the builder started on PreCompact. `ctxd start` is
done when the new daemon answers (its jobs started), and reports the error it logged if it
died first; `ctxd stop` sends SIGTERM and, past its timeout, SIGKILL (nothing is lost: the
index commits entries with their spool offsets, and the next daemon or command goes on).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from indexer import CtxdError, StatePaths, daemon_channel, is_locked, safefs
from summarizer.common.cliargs import state_paths
from summarizer.resume.spawn import autostart

__all__ = [
    "DaemonError",
    "Stopped",
    "cmd_start",
    "cmd_stop",
    "start_daemon",
    "stop_daemon",
    "terminate",
]

START_WAIT_S = 30.0  # a new daemon may first wait for the builder started on PreCompact
KILL_WAIT_S = 5.0
_PING_S = 2.0
_STEP_S = 0.05


class DaemonError(CtxdError):
    """The daemon could not be started or stopped."""


@dataclass(frozen=True)
class Stopped:
    """What `stop_daemon` did: the daemon's pid (0: none ran), and whether it took SIGKILL."""

    pid: int
    killed: bool = False


def start_daemon(paths: StatePaths, wait_s: float = START_WAIT_S) -> tuple[int, bool]:
    """Start the daemon detached and wait until it answers; return (pid, started_now).

    Never starts a second one. Raises DaemonError with the error the daemon logged if it
    exits before answering, or if it does not answer within `wait_s`.
    """
    paths.ensure()
    running = _ping(paths, _PING_S)
    if running:
        return running, False
    log_size = _size(paths.log)
    proc = autostart(str(paths.root))  # None: a daemon a hook started is starting already
    deadline = time.monotonic() + wait_s
    while True:
        pid = _ping(paths, max(0.1, min(_PING_S, deadline - time.monotonic())))
        if pid:
            return pid, proc is not None and proc.pid == pid
        if proc is not None and proc.poll() is not None:
            why = _logged_error(paths.log, log_size)
            raise DaemonError(
                f"the daemon exited at once (status {proc.returncode})"
                + (f": {why}" if why else "")
                + f"; see {paths.log}"
            )
        if time.monotonic() >= deadline:
            raise DaemonError(
                f"the daemon did not answer within {wait_s:.0f} s; see {paths.log} "
                "(`ctxd status` shows when it runs)"
            )
        time.sleep(_STEP_S)


def stop_daemon(paths: StatePaths, wait_s: float = 10.0) -> int:
    """Stop the daemon (see `terminate`); return its pid, 0 if none was running."""
    return terminate(paths, wait_s).pid


def terminate(paths: StatePaths, wait_s: float = 10.0) -> Stopped:
    """SIGTERM the daemon and wait until it has exited; SIGKILL it after `wait_s` seconds."""
    pid = _ping(paths, _PING_S) or _stuck_daemon_pid(paths)
    if not pid:
        return Stopped(0)
    if not _looks_like_daemon(pid):
        raise DaemonError(f"pid {pid} in {paths.daemon_json} is not a ctxd daemon; not signalled")
    _signal(pid, signal.SIGTERM)
    # Wait for the process, not only its lock and socket, so that `ctxd stop && ctxd start`
    # never overlaps two daemons' shutdown and startup.
    if _exited(pid, wait_s):
        return Stopped(pid)
    _signal(pid, signal.SIGKILL)
    if _exited(pid, KILL_WAIT_S):
        return Stopped(pid, killed=True)
    raise DaemonError(f"daemon (pid {pid}) survived SIGKILL for {KILL_WAIT_S:.0f} s")


def cmd_start(args: argparse.Namespace) -> int:
    """Start the daemon in the background."""
    paths = state_paths(args)
    pid, started = start_daemon(paths)
    print(f"daemon {'started' if started else 'already running'} (pid {pid}) for {paths.root}")
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    """Stop the running daemon."""
    paths = state_paths(args)
    timeout = float(args.timeout)
    stopped = terminate(paths, wait_s=timeout)
    if not stopped.pid:
        print(f"no daemon is running for {paths.root}")
    elif stopped.killed:
        print(
            f"ctxd stop: the daemon (pid {stopped.pid}) did not stop within {timeout:g} s of "
            f"SIGTERM; killed it (nothing indexed is lost; see {paths.log})",
            file=sys.stderr,
        )
        print(f"daemon killed (pid {stopped.pid})")
    else:
        print(f"daemon stopped (pid {stopped.pid})")
    return 0


def _ping(paths: StatePaths, timeout_s: float) -> int:
    """The pid of the daemon answering on the socket, 0 if none answers in `timeout_s`."""
    try:
        sock = daemon_channel.connect(paths.root, timeout_s)
    except (TimeoutError, OSError):
        return 0
    if sock is None:
        return 0
    try:
        daemon_channel.send(sock, {"op": "ping"})
        reply = daemon_channel.receive(sock, timeout_s)
    except (TimeoutError, OSError):
        return 0
    finally:
        sock.close()
    pid = reply.get("pid") if reply else None
    return pid if isinstance(pid, int) and not isinstance(pid, bool) else 0


def _stuck_daemon_pid(paths: StatePaths) -> int:
    """A daemon that no longer answers (its pid from daemon.json, while it holds the lock)."""
    pid = _pid(paths)
    if pid and is_locked(paths) and _alive(pid) and _looks_like_daemon(pid):
        return pid
    return 0


def _logged_error(log: Path, since: int) -> str:
    """The last error the daemon logged after byte `since` of its log (its first line)."""
    try:
        fd = safefs.open_file(log.parent, log, os.O_RDONLY)
    except OSError:
        return ""
    with open(fd, "rb") as f:
        f.seek(since if since <= os.fstat(fd).st_size else 0)
        text = f.read().decode("utf-8", "replace")
    errors = [line for line in text.splitlines() if " ERROR " in line]
    if not errors:
        return ""
    return errors[-1].split(" ERROR ", 1)[1].split(": ", 1)[-1]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _exited(pid: int, wait_s: float) -> bool:
    deadline = time.monotonic() + wait_s
    while _alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(_STEP_S)
    return True


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
    try:  # a zombie (an unreaped child) has exited, once the last of its threads has too
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z":
            return True
        # A killed multi-threaded process shows its main thread as a zombie while the others
        # are still exiting, and they hold its files (the writer lock) until the last is gone.
        return len(os.listdir(f"/proc/{pid}/task")) > 1
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
