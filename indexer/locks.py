"""Whether a flock is held by another process: one probe for the daemon lock, stdlib only.

Used by the writer (is a daemon running?) and by the SessionStart fast path (autostart), which
may import nothing beyond the standard library.
"""

from __future__ import annotations

import fcntl
import os


def lock_is_held(path: str) -> bool:
    """True if some process holds an exclusive flock on `path` now; False if it is free or absent.

    Other errors (a path below a regular file, permissions) raise OSError for the caller to
    explain.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
