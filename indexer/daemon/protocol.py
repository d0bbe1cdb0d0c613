"""The daemon's request channel: a Unix socket in the state directory (standard library only).

The daemon listens on `<state dir>/daemon.sock` (0600) for as long as it holds the writer lock,
so a process that can connect to it knows that a daemon runs. The writer lock alone cannot tell:
the detached builder the PreCompact hook starts, and every command that catches up without a
daemon, hold it too. A request and its reply are one JSON object on one line each.

The socket is bound and reached through the state directory's fd (`/proc/self/fd/N/…`), so a
long project path never meets the 108-byte limit of a socket address, and a client opens the
name with O_PATH|O_NOFOLLOW and connects to what it opened, so a symlink planted there is never
followed. Nothing here polls: the daemon blocks in accept(), a client in recv() with a timeout.
"""

from __future__ import annotations

# `_socket`, not `socket`: the SessionStart hook asks whether a daemon runs, and `socket`
# costs ~10 ms to import (enum, selectors) against under 1 ms.
import _socket
import errno
import os
import stat

from indexer import safefs
from indexer.errors import StateDirError

TYPE_CHECKING = False  # not `typing`: the SessionStart fast path imports this module
if TYPE_CHECKING:
    import socket
    from typing import Any

    from indexer.safefs import StrPath

__all__ = [
    "SOCKET_NAME",
    "Listener",
    "close_listener",
    "connect",
    "is_bound",
    "is_listening",
    "listen",
    "receive",
    "send",
]

SOCKET_NAME = "daemon.sock"
MAX_LINE_BYTES = 1 << 16
_NO_DAEMON = (errno.ENOENT, errno.ECONNREFUSED, errno.ENOTSOCK)
# Linux: the socket file is opened (O_PATH, never through a link) and reached by its fd.
# Elsewhere it is checked with lstat, then reached by name (if its path fits an address).
_PROC_FDS = os.path.isdir("/proc/self/fd") and hasattr(os, "O_PATH")
_PATH_FLAGS = getattr(os, "O_PATH", 0) | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_ADDRESS = 107  # sun_path is 108 bytes with its terminating NUL


class Listener:
    """The daemon's listening socket and the identity of the file it is bound to."""

    def __init__(self, sock: socket.socket, identity: tuple[int, int, int]) -> None:
        self.sock = sock
        self.identity = identity


def listen(root: StrPath, backlog: int = 64) -> Listener:
    """Bind `daemon.sock` in the state dir (0600) and listen; the caller holds the writer lock.

    A socket left by a daemon killed with -9, or anything else at that name (a planted
    symlink is removed, never followed), is replaced: no other daemon can be using it.
    """
    import socket  # the daemon's accept() wants socket.socket

    dir_fd = safefs.open_dir(root)
    try:
        try:
            os.unlink(SOCKET_NAME, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # close-on-exec by default
        try:
            sock.bind(_address(root, dir_fd, SOCKET_NAME))
            identity = _private(dir_fd)
            sock.listen(backlog)
        except BaseException:
            sock.close()
            raise
    finally:
        os.close(dir_fd)
    return Listener(sock, identity)


def close_listener(root: StrPath, listener: Listener) -> None:
    """Stop listening (clients are refused from now on) and remove the socket if still ours."""
    listener.sock.close()
    try:
        dir_fd = safefs.open_dir(root, create=False)
    except (OSError, StateDirError):
        return
    try:
        st = os.stat(SOCKET_NAME, dir_fd=dir_fd, follow_symlinks=False)
        if _identity(st) == listener.identity:
            os.unlink(SOCKET_NAME, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
    finally:
        os.close(dir_fd)


def is_bound(root: StrPath, listener: Listener) -> bool:
    """True if `daemon.sock` is still the file `listener` is bound to (not removed, not
    replaced: clients would find no daemon)."""
    try:
        dir_fd = safefs.open_dir(root, create=False)
    except (OSError, StateDirError):
        return False
    try:
        st = os.stat(SOCKET_NAME, dir_fd=dir_fd, follow_symlinks=False)
        return _identity(st) == listener.identity
    except FileNotFoundError:
        return False
    finally:
        os.close(dir_fd)


def connect(root: StrPath, timeout_s: float) -> _socket.socket | None:
    """A connection to the daemon of state dir `root`, or None when no daemon listens there.

    None for no state dir, no socket, a socket nobody listens on (a daemon killed with -9) or
    anything that is not a socket of this user at that name. Raises StateDirError for an
    unsafe state dir, TimeoutError when a daemon's backlog stays full past `timeout_s`.
    """
    try:
        dir_fd = safefs.open_dir(root, create=False)
    except FileNotFoundError:
        return None
    path_fd = None
    try:
        if _PROC_FDS:
            path_fd = _open_socket_file(dir_fd)
            if path_fd is None:
                return None
            address = f"/proc/self/fd/{path_fd}"  # the file opened, not what the name is now
        else:
            if not _is_own_socket(os.stat(SOCKET_NAME, dir_fd=dir_fd, follow_symlinks=False)):
                return None
            address = _address(root, dir_fd, SOCKET_NAME)
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
        try:
            sock.settimeout(timeout_s)
            sock.connect(address)
        except OSError as e:
            sock.close()
            if e.errno in _NO_DAEMON:
                return None
            if e.errno == errno.EAGAIN:  # the backlog is full: busy, not absent
                raise TimeoutError(f"the daemon's request queue is full ({e})") from None
            raise
        return sock
    except FileNotFoundError:
        return None
    finally:
        if path_fd is not None:
            os.close(path_fd)
        os.close(dir_fd)


def is_listening(root: StrPath, timeout_s: float = 1.0) -> bool:
    """True if a daemon listens on the state dir's socket now (a connection is made, then
    closed: the daemon reads an empty request and drops it). False for an unsafe state dir
    (a symlink, another user's, writable by others): nothing is reached through it, and the
    caller's own use of the state dir says what is wrong with it."""
    try:
        sock = connect(root, timeout_s)
    except TimeoutError:
        return True  # a full backlog is a daemon
    except StateDirError:
        return False
    if sock is None:
        return False
    sock.close()
    return True


def send(sock: _socket.socket, message: dict[str, Any]) -> None:
    """Write one message as a JSON line."""
    import json

    sock.sendall(json.dumps(message, separators=(",", ":")).encode() + b"\n")


def receive(sock: _socket.socket, timeout_s: float | None) -> dict[str, Any] | None:
    """Read one JSON line; None if the peer closed first (or sent something else than an
    object). Raises TimeoutError when no whole line came within `timeout_s` (None: forever)."""
    import json
    import time

    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    data = b""
    while b"\n" not in data:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply in time")
            sock.settimeout(left)
        try:
            chunk = sock.recv(4096)
        except ConnectionResetError:
            return None
        if not chunk:
            return None
        data += chunk
        if len(data) > MAX_LINE_BYTES:
            return None
    try:
        message = json.loads(data.split(b"\n", 1)[0])
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def _address(root: StrPath, dir_fd: int, name: str) -> str:
    """The address of `name` in the state dir (open as `dir_fd`), short whatever its path."""
    if _PROC_FDS:
        return f"/proc/self/fd/{dir_fd}/{name}"
    path = os.path.join(os.path.abspath(root), name)  # without /proc: by name, if it fits
    if len(os.fsencode(path)) > _MAX_ADDRESS:
        raise OSError(errno.ENAMETOOLONG, f"{path} is too long for a socket address")
    return path


def _open_socket_file(dir_fd: int) -> int | None:
    """An O_PATH fd of the socket file (None if it is not a socket of this user)."""
    path_fd = os.open(SOCKET_NAME, _PATH_FLAGS, dir_fd=dir_fd)
    if not _is_own_socket(os.fstat(path_fd)):
        os.close(path_fd)
        return None
    return path_fd


def _is_own_socket(st: os.stat_result) -> bool:
    return stat.S_ISSOCK(st.st_mode) and st.st_uid == os.geteuid()


def _private(dir_fd: int) -> tuple[int, int, int]:
    """Make the socket just bound 0600; return its identity."""
    if not _PROC_FDS:
        os.chmod(SOCKET_NAME, 0o600, dir_fd=dir_fd)
        return _identity(os.stat(SOCKET_NAME, dir_fd=dir_fd, follow_symlinks=False))
    path_fd = _open_socket_file(dir_fd)
    if path_fd is None:
        raise StateDirError(f"{SOCKET_NAME} was replaced while the daemon bound it")
    try:
        os.chmod(f"/proc/self/fd/{path_fd}", 0o600)  # the file itself, never through a link
        return _identity(os.fstat(path_fd))
    finally:
        os.close(path_fd)


def _identity(st: os.stat_result) -> tuple[int, int, int]:
    """(dev, inode, ctime): ext4 gives a new file the inode of one just deleted."""
    return st.st_dev, st.st_ino, st.st_ctime_ns
