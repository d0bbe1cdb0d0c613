"""Spool tailing: file identity, the rotation/truncation decision (pure), and bounded reads."""

from __future__ import annotations

import enum
import hashlib
import os
from dataclasses import dataclass

HEAD_BYTES = 64
MARKER_BYTES = 64


@dataclass(frozen=True, slots=True)
class FileState:
    """What the index remembers of one spool file generation (I5)."""

    file_id: int
    name: str
    dev: int
    ino: int
    head_len: int
    head_hash: bytes
    offset: int
    marker: bytes
    line_no: int
    partial_since: float = 0.0  # wall time a partial tail was first seen unchanged; 0 = none
    partial_size: int = 0


@dataclass(frozen=True, slots=True)
class Observed:
    """What a stat plus two small preads show of a spool file now."""

    dev: int
    ino: int
    size: int
    head: bytes  # the first min(size, HEAD_BYTES) bytes
    before_offset: bytes  # the MARKER_BYTES bytes before the stored offset ("" if unknown)


class Action(enum.Enum):
    NEW = "new"  # never seen: read from 0
    CONTINUE = "continue"  # same file: read from the stored offset
    TRUNCATED = "truncated"  # shorter than the offset: a new generation, read from 0
    REPLACED = "replaced"  # other inode, head or marker: a new generation, read from 0


def digest(data: bytes) -> bytes:
    """A short content hash for identity checks."""
    return hashlib.blake2b(data, digest_size=8).digest()


def decide(stored: FileState | None, seen: Observed) -> Action:
    """Decide how to continue reading a file (pure; ARCHITECTURE I5).

    ext4 reuses an inode at once after a delete, so the inode alone is never trusted: the head
    hash and the marker (a hash of the bytes just before the offset) must match as well.
    """
    if stored is None:
        return Action.NEW
    if seen.size < stored.offset:
        return Action.TRUNCATED
    if (seen.dev, seen.ino) != (stored.dev, stored.ino):
        return Action.REPLACED
    if stored.head_len and digest(seen.head[: stored.head_len]) != stored.head_hash:
        return Action.REPLACED
    if stored.offset and digest(seen.before_offset) != stored.marker:
        return Action.REPLACED
    return Action.CONTINUE


def observe(fd: int, offset: int) -> Observed:
    """Stat an open spool file and read its head and the bytes before `offset`."""
    st = os.fstat(fd)
    head = os.pread(fd, HEAD_BYTES, 0) if st.st_size else b""
    before = b""
    if 0 < offset <= st.st_size:
        start = max(0, offset - MARKER_BYTES)
        before = os.pread(fd, offset - start, start)
    return Observed(st.st_dev, st.st_ino, st.st_size, head, before)


def marker_for(fd: int, offset: int) -> bytes:
    """The marker of a new committed offset: the hash of the bytes just before it."""
    if offset <= 0:
        return b""
    start = max(0, offset - MARKER_BYTES)
    return digest(os.pread(fd, offset - start, start))


def advanced(state: FileState, fd: int, offset: int, line_no: int) -> FileState:
    """`state` moved to a new committed `offset` (and line count): the marker of the bytes
    before it, and the head hash grown while the file is shorter than HEAD_BYTES."""
    head_len, head_hash = state.head_len, state.head_hash
    if head_len < HEAD_BYTES:
        head_len, head_hash = head_for(fd, offset)
    return FileState(
        state.file_id,
        state.name,
        state.dev,
        state.ino,
        head_len,
        head_hash,
        offset,
        marker_for(fd, offset),
        line_no,
    )


def next_newline(fd: int, start: int, size: int) -> int:
    """Offset of the first b"\\n" at or after `start` (before `size`), or -1 if none yet."""
    pos = start
    while pos < size:
        block = os.pread(fd, min(1 << 20, size - pos), pos)
        if not block:
            break
        i = block.find(b"\n")
        if i >= 0:
            return pos + i
        pos += len(block)
    return -1


def head_for(fd: int, size: int) -> tuple[int, bytes]:
    """The head length and hash to remember; grows until HEAD_BYTES as the file grows."""
    head = os.pread(fd, min(size, HEAD_BYTES), 0) if size else b""
    return len(head), digest(head)


def read_chunk(fd: int, offset: int, size: int, want: int, max_line: int) -> bytes:
    """Read from `offset` up to `want` bytes, extended until the chunk holds a b"\\n".

    Extending (rather than returning nothing) lets one line longer than `want` be read whole;
    `max_line` caps how far it extends so a runaway line cannot exhaust memory.
    """
    length = min(want, size - offset)
    if length <= 0:
        return b""
    buf = os.pread(fd, length, offset)
    while b"\n" not in buf and offset + len(buf) < size and len(buf) < max_line:
        more = os.pread(
            fd, min(max(len(buf), 1 << 20), size - offset - len(buf)), offset + len(buf)
        )
        if not more:
            break
        buf += more
    return buf
