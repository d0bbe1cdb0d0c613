"""indexer.spool.tailer at its edges: offsets at and past EOF, short files, and the read growth step."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from indexer.spool.tailer import (
    HEAD_BYTES,
    MARKER_BYTES,
    Action,
    FileState,
    Observed,
    decide,
    digest,
    head_for,
    marker_for,
    observe,
    read_chunk,
)

CONTENT = b"".join(b'{"ctxd":1,"ts_ns":%d,"pid":7,"event":{"n":%d}}\n' % (i, i) for i in range(8))


def _fd(tmp_path: Path, data: bytes) -> int:
    path = tmp_path / "20261125T15.jsonl"
    path.write_bytes(data)
    return os.open(path, os.O_RDONLY)


@pytest.fixture
def fd(tmp_path: Path) -> Iterator[int]:
    handle = _fd(tmp_path, CONTENT)
    try:
        yield handle
    finally:
        os.close(handle)


def test_constants_are_the_documented_window() -> None:
    # Stored markers and heads in existing indexes were computed with these widths.
    assert (HEAD_BYTES, MARKER_BYTES) == (64, 64)


def test_digest_is_an_8_byte_blake2b() -> None:
    assert len(digest(b"abc")) == 8
    assert digest(b"abc") != digest(b"abd")
    assert digest(b"abc") == hashlib.blake2b(b"abc", digest_size=8).digest()


def test_observe_at_exactly_eof_reads_the_marker(fd: int) -> None:
    size = len(CONTENT)
    seen = observe(fd, size)
    assert seen.before_offset == CONTENT[size - MARKER_BYTES :]
    assert observe(fd, size + 1).before_offset == b""


def test_observe_below_the_marker_width_reads_from_zero(fd: int) -> None:
    assert observe(fd, 10).before_offset == CONTENT[:10]
    assert observe(fd, MARKER_BYTES).before_offset == CONTENT[:MARKER_BYTES]
    assert observe(fd, MARKER_BYTES + 1).before_offset == CONTENT[1 : MARKER_BYTES + 1]
    assert observe(fd, 1).before_offset == CONTENT[:1]


def test_observe_an_empty_file(tmp_path: Path) -> None:
    handle = _fd(tmp_path, b"")
    try:
        seen = observe(handle, 0)
        assert (seen.size, seen.head, seen.before_offset) == (0, b"", b"")
        assert head_for(handle, 0) == (0, digest(b""))
        assert read_chunk(handle, 0, 0, 100, 1000) == b""
    finally:
        os.close(handle)


def test_observe_a_short_file_head_is_the_whole_file(tmp_path: Path) -> None:
    handle = _fd(tmp_path, b"abc\n")
    try:
        seen = observe(handle, 4)
        assert seen.head == b"abc\n"
        assert seen.before_offset == b"abc\n"
    finally:
        os.close(handle)


def test_marker_for_edges(fd: int) -> None:
    assert marker_for(fd, -1) == b""
    assert marker_for(fd, 1) == digest(CONTENT[:1])
    assert marker_for(fd, MARKER_BYTES) == digest(CONTENT[:MARKER_BYTES])
    assert marker_for(fd, MARKER_BYTES + 3) == digest(CONTENT[3 : MARKER_BYTES + 3])


def test_head_for_one_past_and_below_the_width(fd: int) -> None:
    assert head_for(fd, HEAD_BYTES + 1) == (HEAD_BYTES, digest(CONTENT[:HEAD_BYTES]))
    assert head_for(fd, HEAD_BYTES - 1) == (HEAD_BYTES - 1, digest(CONTENT[: HEAD_BYTES - 1]))
    assert head_for(fd, 1) == (1, digest(CONTENT[:1]))


def _state(offset: int, head_len: int = HEAD_BYTES, marker: bytes | None = None) -> FileState:
    return FileState(
        file_id=1,
        name="s.jsonl",
        dev=1,
        ino=2,
        head_len=head_len,
        head_hash=digest(CONTENT[:head_len]),
        offset=offset,
        marker=digest(CONTENT[max(0, offset - MARKER_BYTES) : offset])
        if marker is None
        else marker,
        line_no=0,
    )


def _seen(size: int, offset: int, dev: int = 1, ino: int = 2) -> Observed:
    return Observed(
        dev, ino, size, CONTENT[:HEAD_BYTES], CONTENT[max(0, offset - MARKER_BYTES) : offset]
    )


def test_decide_size_equal_to_offset_continues() -> None:
    off = len(CONTENT)
    assert decide(_state(off), _seen(off, off)) is Action.CONTINUE
    assert decide(_state(off), _seen(off - 1, off)) is Action.TRUNCATED


def test_decide_other_device_same_inode_is_replaced() -> None:
    assert decide(_state(100), _seen(len(CONTENT), 100, dev=9)) is Action.REPLACED
    assert decide(_state(100), _seen(len(CONTENT), 100, ino=9)) is Action.REPLACED


def test_decide_without_a_head_or_a_marker_trusts_the_inode() -> None:
    # Nothing remembered yet (offset 0, empty head): only the inode can be compared.
    state = _state(0, head_len=0, marker=b"")
    seen = Observed(1, 2, 5, b"other", b"")
    assert decide(state, seen) is Action.CONTINUE


def test_read_chunk_want_past_eof_is_clipped(fd: int) -> None:
    size = len(CONTENT)
    assert read_chunk(fd, size - 10, size, 1000, 1 << 20) == CONTENT[-10:]
    assert read_chunk(fd, size + 5, size, 100, 1 << 20) == b""
    assert read_chunk(fd, 0, size, 0, 1 << 20) == b""


def test_read_chunk_growth_step_is_the_buffer_or_one_mib(tmp_path: Path) -> None:
    # A runaway line: each extension reads max(len(buf), 1 MiB) more, clipped to the file,
    # and stops once max_line is reached; so the exact length read is known.
    data = b"y" * (5 << 20)
    handle = _fd(tmp_path, data)
    try:
        size = len(data)
        assert len(read_chunk(handle, 0, size, 10, 15)) == 10 + (1 << 20)
        # max_line reached after the first extension: 10 + 1 MiB >= 1 MiB + 10
        assert len(read_chunk(handle, 0, size, 10, (1 << 20) + 10)) == 10 + (1 << 20)
        # one byte more: a second extension doubles the buffer
        assert len(read_chunk(handle, 0, size, 10, (1 << 20) + 11)) == 2 * (10 + (1 << 20))
        # the last extension is clipped to the end of the file
        assert read_chunk(handle, 100, size, 10, 64 << 20) == data[100:]
        # reading from a later offset: the extension starts where the buffer ends
        assert len(read_chunk(handle, size - 30, size, 10, 64 << 20)) == 30
    finally:
        os.close(handle)


def test_read_chunk_extension_keeps_reading_until_the_newline(tmp_path: Path) -> None:
    data = b"z" * ((1 << 20) + 5) + b"\nrest\n"
    handle = _fd(tmp_path, data)
    try:
        chunk = read_chunk(handle, 2, len(data), 3, 64 << 20)
        assert chunk == data[2:]
        assert chunk[(1 << 20) + 3] == ord("\n")
    finally:
        os.close(handle)


def test_read_chunk_never_reads_past_the_observed_size(tmp_path: Path) -> None:
    # The hook may append after the stat: bytes past `size` belong to the next pass.
    data = b"a" * 40 + b"\n" + b"b" * 40
    handle = _fd(tmp_path, data)
    try:
        assert read_chunk(handle, 10, 20, 100, 1 << 20) == data[10:20]
        assert read_chunk(handle, 5, 30, 4, 1 << 20) == data[5:30]
        assert read_chunk(handle, 0, 3, 1, 1 << 20) == data[:3]
    finally:
        os.close(handle)


def test_read_chunk_growth_stops_at_the_observed_size(tmp_path: Path) -> None:
    data = b"c" * (3 << 20)
    path = tmp_path / "grown.jsonl"
    path.write_bytes(data)
    handle = os.open(path, os.O_RDONLY)
    try:
        size = (1 << 20) + 100  # what the stat saw; the rest was appended later
        assert read_chunk(handle, 50, size, 10, 64 << 20) == data[50:size]
        assert read_chunk(handle, 0, size, 10, 64 << 20) == data[:size]
    finally:
        os.close(handle)


def test_read_chunk_of_a_file_truncated_after_the_stat(tmp_path: Path) -> None:
    # The stat saw more bytes than are left: the read returns what is there.
    data = b"d" * 30
    handle = _fd(tmp_path, data)
    try:
        assert read_chunk(handle, 0, 100, 5, 1 << 20) == data
        assert read_chunk(handle, 10, 100, 5, 1 << 20) == data[10:]
    finally:
        os.close(handle)
