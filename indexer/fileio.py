"""Private, atomic file writes (I10, I11): temp + fsync + rename, appends, stale-temp sweeping."""

from __future__ import annotations

import os
from pathlib import Path

from indexer import safefs

TEMP_SUFFIX = safefs.TEMP_SUFFIX


def write_atomic(path: Path, data: bytes, *, root: Path) -> None:
    """Write a file by temp + fsync + rename + directory fsync (I11), through directory fds
    walked from the state dir `root` (no symlink followed, indexer.safefs)."""
    safefs.write_atomic(root, path, data)


def sweep_temp_files(root: Path) -> int:
    """Remove temp files left by a crash mid-write anywhere under `root`; return how many."""
    return safefs.sweep_temp_files(root)


def write_all(fd: int, data: bytes) -> None:
    """os.write until every byte is written (short writes happen, e.g. near a full disk)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
