"""Private, atomic file writes (I10, I11): temp + fsync + rename, appends, stale-temp sweeping."""

from __future__ import annotations

import os
from pathlib import Path

from indexer.paths import FILE_MODE, ensure_private_dir

TEMP_SUFFIX = ".tmp"


def write_atomic(path: Path, data: bytes) -> None:
    """Write a file by temp + fsync + rename + directory fsync (I11)."""
    ensure_private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}{TEMP_SUFFIX}")
    fd = os.open(
        tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE
    )
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def sweep_temp_files(root: Path) -> int:
    """Remove temp files left by a crash mid-write anywhere under `root`; return how many."""
    removed = 0
    if not root.is_dir():
        return 0
    for path in root.rglob(f".*{TEMP_SUFFIX}"):
        try:
            path.unlink()
            removed += 1
        except OSError:
            pass
    return removed


def write_all(fd: int, data: bytes) -> None:
    """os.write until every byte is written (short writes happen, e.g. near a full disk)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
