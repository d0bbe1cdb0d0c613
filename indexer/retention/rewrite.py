"""Rewrite an indexed spool segment without some sessions' lines, under its append lock."""

# `ctxd forget` must take a session's raw events out of the spool without taking anyone
# else's: the spool is what `ctxd rebuild` re-indexes after the index is lost. So a segment
# holding forgotten lines is copied, minus those lines, to a temporary file in the spool
# folder and renamed over the segment while the segment's append flock is held (the hook
# appends under that flock and, after waiting for it, checks that the name still leads to
# the inode it locked: a hook that waited appends to the new file, none is lost). The index
# then records the new file as a new generation of the name, already read to its end (I5),
# and moves the kept lines' entries and quarantined lines to their new offsets. A crash
# between the rename and that commit leaves an identity the tailer calls replaced: it reads
# the file again from 0 and the events' (ts_ns, pid) key absorbs every kept line (I3).

from __future__ import annotations

import errno
import fcntl
import os
import sqlite3
import time
from collections.abc import Callable, Iterator

import msgspec

from indexer import safefs
from indexer.index import store
from indexer.index.transactions import transaction
from indexer.models import Envelope
from indexer.paths import StatePaths
from indexer.retention.spool import RetentionReport, fully_indexed
from indexer.spool.lines import LineError, decode_envelope, written_envelope
from indexer.spool.tailer import FileState, advanced

__all__ = ["rewrite_segment", "session_of"]

_BLOCK = 1 << 20


class _Event(msgspec.Struct):
    session_id: str = ""


_EVENT = msgspec.json.Decoder(_Event)


def session_of(line: bytes) -> str | None:
    """The session id of a spool line's event ("" if it has none), or None when the line is
    not a decodable envelope (the quarantine holds it)."""
    env = _envelope(line)
    if env is None:
        return None
    try:
        return _EVENT.decode(env.event).session_id
    except (msgspec.DecodeError, ValueError):
        return None


def rewrite_segment(
    conn: sqlite3.Connection,
    paths: StatePaths,
    name: str,
    stored: FileState | None,
    report: RetentionReport,
    drop: Callable[[bytes], bool],
    catch_up: Callable[[str], FileState | None],
) -> None:
    """Remove the lines `drop` selects from the segment `name` (the caller holds the writer
    lock). Under the segment's append lock, `catch_up(name)` first indexes what hooks
    appended since `stored` and returns the segment's new state. A segment left empty is
    deleted; one that still is not fully indexed (a torn last line not yet quarantined) is
    kept whole and named in `report.segments_kept_unindexed`."""
    try:
        spool_fd = safefs.open_dir(paths.root, paths.spool, create=False)
    except FileNotFoundError:
        return
    try:
        try:
            fd = os.open(name, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=spool_fd)
        except FileNotFoundError:
            return
        except OSError as e:
            if e.errno != errno.ELOOP:
                raise
            return  # a symlink where a segment should be: never ours to read or rewrite
        try:
            if not any(drop(line) for line, _, _ in _lines(fd)):
                return  # nothing to take out: no lock taken, no hook kept waiting
            fcntl.flock(fd, fcntl.LOCK_EX)  # no hook appends from here on
            if os.stat(name, dir_fd=spool_fd, follow_symlinks=False).st_ino != os.fstat(fd).st_ino:
                return  # replaced meanwhile: not the file that was indexed
            if stored is None or not fully_indexed(fd, stored):
                # Appended since the caller's last pass: indexed now, while no hook can add
                # more, so that the lines kept are exactly the lines indexed.
                stored = catch_up(name)
                if stored is None or not fully_indexed(fd, stored):
                    report.segments_kept_unindexed.append(name)
                    return
            _rewrite_locked(conn, spool_fd, fd, name, stored, report, drop)
        finally:
            os.close(fd)  # releases the flock: a hook that waited reopens the name
    finally:
        os.close(spool_fd)


def _rewrite_locked(
    conn: sqlite3.Connection,
    spool_fd: int,
    fd: int,
    name: str,
    stored: FileState,
    report: RetentionReport,
    drop: Callable[[bytes], bool],
) -> None:
    tmp = f".{name}.rewrite.{os.getpid()}{safefs.TEMP_SUFFIX}"  # swept at start if left
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    out = os.open(tmp, flags, safefs.FILE_MODE, dir_fd=spool_fd)
    try:
        # Held until the index knows the new file: a hook that opens it after the rename
        # waits, so the offset recorded below is the file's whole content.
        fcntl.flock(out, fcntl.LOCK_EX)
        moves, removed, size = _copy_kept(fd, out, drop)
        report.lines_removed += removed
        if not moves:
            os.unlink(tmp, dir_fd=spool_fd)
            with transaction(conn):
                store.retire_file(conn, stored.file_id)  # retired first, as retention does
                conn.execute("DELETE FROM quarantine WHERE file_id=?", (stored.file_id,))
            os.unlink(name, dir_fd=spool_fd)
            report.segments_deleted.append(name)
            return
        os.fsync(out)
        old = os.fstat(fd)
        os.utime(out, ns=(old.st_atime_ns, old.st_mtime_ns))  # retention ages it by mtime
        os.rename(tmp, name, src_dir_fd=spool_fd, dst_dir_fd=spool_fd)
        os.fsync(spool_fd)
        _record_new_generation(conn, out, name, stored, moves, size)
        report.segments_rewritten.append(name)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=spool_fd)
        except OSError:
            pass  # renamed already, or never made
        raise
    finally:
        os.close(out)


# (old offset, new offset, new line number, ts_ns, pid) of a kept line; ts_ns is -1 for a
# line that is not an envelope (it is in the quarantine, not among the entries).
_Move = tuple[int, int, int, int, int]


def _copy_kept(fd: int, out: int, drop: Callable[[bytes], bool]) -> tuple[list[_Move], int, int]:
    """Write the lines `drop` keeps to `out`; their moves, how many were dropped, the size."""
    moves: list[_Move] = []
    removed = 0
    position = 0
    for line, offset, ended in _lines(fd):
        if drop(line):
            removed += 1
            continue
        env = _envelope(line)
        ts_ns, pid = (env.ts_ns, env.pid) if env is not None else (-1, -1)
        moves.append((offset, position, len(moves) + 1, ts_ns, pid))
        view = memoryview(line + b"\n" if ended else line)
        position += len(view)
        while view:
            view = view[os.write(out, view) :]
    return moves, removed, position


def _record_new_generation(
    conn: sqlite3.Connection,
    out: int,
    name: str,
    stored: FileState,
    moves: list[_Move],
    size: int,
) -> None:
    st = os.fstat(out)
    old_id = stored.file_id
    with transaction(conn):
        fresh = store.new_file(conn, name, st.st_dev, st.st_ino, "rewritten", time.time_ns())
        store.save_file(conn, advanced(fresh, out, size, len(moves)))
        new_id = fresh.file_id
        conn.executemany(
            "UPDATE entries SET file_id=?, offset=?, line_no=? WHERE ts_ns=? AND pid=?"
            " AND file_id=?",
            [(new_id, new, no, ts, pid, old_id) for _, new, no, ts, pid in moves if ts >= 0],
        )
        conn.executemany(
            "UPDATE quarantine SET file_id=?, offset=?, line_no=? WHERE file_id=? AND offset=?",
            [(new_id, new, no, old_id, old) for old, new, no, _, _ in moves],
        )
        # What is left under the old generation is the dropped lines' quarantine: it goes too.
        conn.execute("DELETE FROM quarantine WHERE file_id=?", (old_id,))


def _lines(fd: int) -> Iterator[tuple[bytes, int, bool]]:
    """(line without its newline, its offset, whether a newline ended it) of every line."""
    size = os.fstat(fd).st_size
    pos = start = 0
    carry = b""
    while pos < size:
        block = os.pread(fd, min(_BLOCK, size - pos), pos)
        if not block:
            break
        pos += len(block)
        data = carry + block
        begin = 0
        end = data.find(b"\n")
        while end >= 0:
            yield data[begin:end], start, True
            start += end + 1 - begin
            begin = end + 1
            end = data.find(b"\n", begin)
        carry = data[begin:]
    if carry:  # a torn last line the quarantine took: kept as it is, without a newline
        yield carry, start, False


def _envelope(line: bytes) -> Envelope | None:
    env = written_envelope(line)
    if env is not None:
        return env
    try:
        return decode_envelope(line)
    except LineError:
        return None
