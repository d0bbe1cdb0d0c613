"""Counters of hook events that never reached the spool: made with the state dir, read back.

The hook counts an event it could not append (plugin/ctxd_hook/losses.py): one byte per lost
event, its reason as a letter, in `<state dir>/hook-failures` or, when the state dir cannot
or must not be written, in the user's own `$XDG_STATE_HOME/ctxd/lost-events/<the state dir's
real path, escaped>`. `StatePaths.ensure` creates the first ahead, with disk blocks reserved
beyond its end, so that counting still works on a full disk; `ctxd status` and `ctxd doctor`
add both up. The file names, the header and the letters are the hook's (a copy: the hook
imports only the standard library and its own folder; tests/ctxd_hook/test_copies.py checks
that the two agree).
"""

from __future__ import annotations

import os

HOOK_FAILURES = "hook-failures"
_HEADER = b"ctxd: one byte per hook event that could not be written to the spool of "
_RESERVE_BYTES = 64 * 1024  # lost events still countable on a full disk
_MAX_READ = 16 << 20
_PLAIN = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
_MAX_NAME = 200  # bytes of a file name: file systems allow 255

DISK_FULL = b"F"
READ_ONLY = b"R"
NO_PERMISSION = b"P"
NOT_PRIVATE = b"U"
OTHER = b"x"  # also every byte of a count written before reasons were recorded
REASONS = {
    DISK_FULL: "disk full",
    READ_ONLY: "read-only file system",
    NO_PERMISSION: "permission denied",
    NOT_PRIVATE: "state dir not private (another user's, writable by others, or a symlink)",
    OTHER: "other error",
}

__all__ = [
    "HOOK_FAILURES",
    "REASONS",
    "failure_count",
    "loss_files",
    "losses",
    "prepare_counter",
    "user_counter_path",
]



def user_counter_path(base: str) -> str:
    """The user's own counter of events lost under the state dir `base`: its real path as
    the file name (bytes other than letters, digits, `.`, `_` and `-` as %XX; a long path cut,
    with a checksum of the whole), so the name says which state dir it counts for."""
    home = os.environ.get("XDG_STATE_HOME", "")
    if not os.path.isabs(home):  # unset, empty or relative: ignored, as the spec says
        home = os.path.join(os.path.expanduser("~"), ".local", "state")
    real = os.fsencode(os.path.realpath(base))
    name = "".join(chr(b) if b in _PLAIN else f"%{b:02X}" for b in real)
    if len(name) > _MAX_NAME:
        import zlib  # not hashlib: it loads OpenSSL, which costs more than the hook itself

        name = f"{name[: _MAX_NAME - 9]}~{zlib.crc32(real):08x}"
    return os.path.join(home, "ctxd", "lost-events", name)


def losses(base: str) -> dict[str, int]:
    """How many events were lost under the state dir `base`, by reason (both counters)."""
    found: dict[str, int] = {}
    mine = _header(base)
    for path in loss_files(base):
        letters = _letters(path, None if path == os.path.join(base, HOOK_FAILURES) else mine)
        for letter, count in letters.items():
            reason = REASONS.get(letter, REASONS[OTHER])
            found[reason] = found.get(reason, 0) + count
    return found


def failure_count(base: str) -> int:
    """How many events hooks could not spool under the state dir `base`."""
    return sum(losses(base).values())


def loss_files(base: str) -> list[str]:
    """The counters of `base` that exist (delete them to reset the count)."""
    paths = [os.path.join(base, HOOK_FAILURES), user_counter_path(base)]
    return [p for p in paths if os.path.lexists(p)]


def prepare_counter(base: str) -> None:
    """Create the state dir's counter (0600, empty but for its header) with disk blocks kept
    beyond its end, if it does not exist yet; errors are ignored (the count is best effort)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(os.path.join(base, HOOK_FAILURES), flags, 0o600)
    except OSError:
        return  # there already (or not writable: the hook's counter goes to the user's)
    try:
        os.write(fd, _header(base))
        _reserve(fd, _RESERVE_BYTES)
    except OSError:
        pass
    finally:
        os.close(fd)



def _header(base: str) -> bytes:
    return _HEADER + os.fsencode(os.path.realpath(base)).replace(b"\n", b"\\n") + b"\n"


def _letters(path: str, header: bytes | None) -> dict[bytes, int]:
    """The count of each letter in the counter `path`, its header aside; {} if `header` is
    given and the file counts for another state dir (a cut name's checksum collided)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        data = os.read(fd, _MAX_READ)
    except OSError:
        return {}
    finally:
        os.close(fd)
    if header is not None and header not in data:
        return {}
    start = data.find(_HEADER)
    if start >= 0:
        end = data.find(b"\n", start)
        data = data[:start] + (data[end + 1 :] if end >= 0 else b"")
    counts: dict[bytes, int] = {}
    for letter in set(data):
        counts[bytes([letter])] = data.count(letter)
    return counts


def _reserve(fd: int, size: int) -> None:
    """Keep `size` bytes of disk blocks for the file without changing its size (Linux
    fallocate with FALLOC_FL_KEEP_SIZE); nothing where that is not supported."""
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        fallocate = libc.fallocate
    except (OSError, AttributeError, ImportError):
        return
    fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
    fallocate(fd, 1, 0, size)  # 1 = FALLOC_FL_KEEP_SIZE; a failure leaves no reserve
