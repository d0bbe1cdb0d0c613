"""Hook events that could not be spooled: counted where the hook can still write (stdlib).

The hook must never fail the agent (I1), so an event it cannot append is lost; this module
makes sure the loss is counted, and why. One byte per lost event, its reason as a letter,
appended with one O_APPEND write (no lock, no parsing):
  - in `<state dir>/hook-failures`, which `StatePaths.ensure` creates ahead with a reserve
    of disk blocks beyond its end, so that appends still fit on a full disk;
  - else (a read-only state dir, one the hook's user cannot write or must not use: another
    user's, writable by others, a symlink) in the user's own state folder,
    `$XDG_STATE_HOME/ctxd/lost-events/<the state dir's real path, escaped>`.
`ctxd status` and `ctxd doctor` add both up (indexer/lost_events.py reads them; the file
names, the header and the letters are the same in both, tests/ctxd_hook/test_copies.py
checks it). The hook imports this module on its failure path only (never when the event was
spooled).
"""

from __future__ import annotations

import errno
import os

HOOK_FAILURES = "hook-failures"
_HEADER = b"ctxd: one byte per hook event that could not be written to the spool of "
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

__all__ = ["HOOK_FAILURES", "REASONS", "count_loss", "reason_of", "user_counter_path"]


def reason_of(error: BaseException) -> bytes:
    """The letter recorded for an event lost to `error`."""
    if type(error).__name__ == "UnsafeStateDir":  # the hook's class or safefs': same meaning
        return NOT_PRIVATE
    code = getattr(error, "errno", None)
    if code in (errno.ENOSPC, errno.EDQUOT):
        return DISK_FULL
    if code == errno.EROFS:
        return READ_ONLY
    if code in (errno.EACCES, errno.EPERM):
        return NO_PERMISSION
    return OTHER


def count_loss(base: str, reason: bytes) -> None:
    """Count one event lost under the state dir `base` (never raises).

    The state dir's own counter first, unless the state dir must not be used at all; the
    user's counter when that fails.
    """
    try:
        header = _header(base)
        if reason != NOT_PRIVATE and _append(os.path.join(base, HOOK_FAILURES), header, reason):
            return
        path = user_counter_path(base)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        _append(path, header, reason)
    except Exception:
        pass  # nowhere left to write: the loss cannot be counted (I1 comes first)


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






def _append(path: str, header: bytes, reason: bytes) -> bool:
    """Append `reason` to `path`, creating it with `header` first; False if it failed."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    data = reason
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        try:
            # The creator writes the header and its byte at once; a concurrent hook that
            # appends in between only puts its byte before the header (`_letters` copes).
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600)
            data = header + reason
        except FileExistsError:
            fd = os.open(path, flags)
        except OSError:
            return False
    except OSError:
        return False
    try:
        return os.write(fd, data) == len(data)
    except OSError:
        return False
    finally:
        os.close(fd)


def _header(base: str) -> bytes:
    return _HEADER + os.fsencode(os.path.realpath(base)).replace(b"\n", b"\\n") + b"\n"
