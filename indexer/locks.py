"""flock helpers, stdlib only: is a lock held by another process, and take one within a time.

Used by the writer (is a daemon running?), by the SessionStart fast path (autostart), which
may import nothing beyond the standard library, and by the task store's lock.
"""

from __future__ import annotations

import fcntl
import os
import time


def flock_within(fd: int, wait_s: float, poll_s: float = 0.02) -> bool:
    """Take an exclusive flock on `fd`, retrying for up to `wait_s` seconds; False if another
    process still holds it then (the caller says who and what to do)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll_s)


def lock_is_held(path: str) -> bool:
    """True if some process holds an exclusive flock on `path` now; False if it is free or absent.

    Other errors (a path below a regular file, permissions) raise OSError for the caller to
    explain.
    """
    try:
        # Read-only: flock needs no write access, and a read-only state dir (a read-only
        # mount, a folder the reader may not write) must still answer.
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
