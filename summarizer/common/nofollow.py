"""Reading inside the state directory without following symlinks (standard library only)."""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["is_plain_dir", "read_nofollow"]


def is_plain_dir(path: str) -> bool | None:
    """True for a real directory, False for a symlink or anything else, None if missing."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return None
    except OSError:
        return False


def read_nofollow(path: str, dir_fd: int | None = None) -> bytes:
    """The bytes of a regular file (`path` relative to `dir_fd` if given); a symlink in its
    place is an error (ELOOP), and so is a FIFO or a device (opened without blocking, so a
    hook never hangs on one)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags, dir_fd=dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
