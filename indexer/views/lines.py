"""Reading a view file from its end: its last line, and where its part in event-time order ends."""

from __future__ import annotations

import calendar
import os
from datetime import UTC, datetime

import msgspec

from indexer.fileio import lines_backwards, lines_backwards_at

__all__ = ["EVERYTHING", "NOTHING", "head_before", "last_line_of_fd", "upper_bound"]

NOTHING = (-1, -1)  # the (ts_ns, pid) of the newest event of an empty view
EVERYTHING = (2**63, 2**63)  # later than any event


class LastLine(msgspec.Struct):
    """The fields of a view line that say where the view stands."""

    seq: int = 0
    timestamp: str = ""


_LAST = msgspec.json.Decoder(LastLine)


def last_line_of_fd(fd: int) -> LastLine:
    """The `seq` and `timestamp` of the last line that parses in an open (read-write) view; a
    torn tail left by a crash mid-append is cut off first, and corrupt lines are passed over
    (seq 0: none)."""
    size = os.fstat(fd).st_size
    end = _after_last_newline(fd, size)
    if end != size:
        os.ftruncate(fd, end)
    for line in lines_backwards(fd, end):
        try:
            last = _LAST.decode(line)
        except (msgspec.DecodeError, ValueError):
            continue
        if last.seq > 0:
            return last
    return LastLine()


def head_before(fd: int, since: str) -> int:
    """The offset just after the last line stamped before `since`, going back from the end of
    a view whose lines up to there are in order (0: none)."""
    size = os.fstat(fd).st_size
    for start, line in lines_backwards_at(fd, _after_last_newline(fd, size)):
        try:
            stamp = _LAST.decode(line).timestamp
        except (msgspec.DecodeError, ValueError):
            continue  # a corrupt line: rewritten with the tail
        if stamp and stamp < since:  # ISO stamps of one format sort as the times they name
            return start + len(line) + 1
    return 0


def upper_bound(timestamp: str) -> tuple[int, int]:
    """The latest (ts_ns, pid) an event stamped `timestamp` (milliseconds) can have."""
    try:
        moment = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return EVERYTHING  # unreadable: every later line is taken for out of order
    ms = calendar.timegm(moment.timetuple()) * 1000 + moment.microsecond // 1000
    return (ms + 1) * 1_000_000 - 1, EVERYTHING[1]


def _after_last_newline(fd: int, size: int) -> int:
    """The offset just after the last b"\\n" of a file `size` bytes long (0 if none)."""
    pos = size
    while pos > 0:
        start = max(0, pos - 4096)
        found = os.pread(fd, pos - start, start).rfind(b"\n")
        if found >= 0:
            return start + found + 1
        pos = start
    return 0
