"""Private, atomic file writes (I10, I11), appends, stale-temp sweeping, and backward line reads."""

from __future__ import annotations

import os
from collections.abc import Iterator
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


FIRST_BLOCK = 64 * 1024  # bytes read first by lines_backwards; doubled up to 8 MB


def lines_backwards(fd: int, end: int) -> Iterator[bytes]:
    """The complete lines (without b"\\n") of an open file before offset `end`, the last one
    first, read backwards in growing blocks (the end of a 50 MB view costs one small read).

    A last line without its b"\\n" (still being written, or torn by a crash) is no line yet.
    """
    for _, line in lines_backwards_at(fd, end):
        yield line


def lines_backwards_at(fd: int, end: int) -> Iterator[tuple[int, bytes]]:
    """`lines_backwards`, each line with the offset where it starts."""
    pos = end
    block = FIRST_BLOCK
    rest = b""  # the start of the earliest line read so far (its beginning not read yet)
    ended = False  # whether the last b"\\n" before `end` was found
    while pos > 0:
        start = max(0, pos - block)
        data = os.pread(fd, pos - start, start) + rest
        pos = start
        block = min(block * 2, 8 * 1024 * 1024)
        if not ended:
            last = data.rfind(b"\n")
            if last < 0:
                rest = b""
                continue
            data, ended = data[:last], True
        pieces = data.split(b"\n")
        # Offsets from the end of `data`: each piece ends where the next one starts, less 1.
        at = start + len(data) + 1
        for i in range(len(pieces) - 1, 0 if pos > 0 else -1, -1):
            at -= len(pieces[i]) + 1
            yield at, pieces[i]
        rest = pieces[0] if pos > 0 else b""
