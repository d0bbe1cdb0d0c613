"""The newest spool line of one session, read from the spool's tail (stdlib, for the hook)."""

# The SessionStart hook must not inject a context older than the work it describes: a state
# refreshed after a periodic compaction, say, while the PreCompact that followed is still in
# the spool and not yet indexed. The index cannot tell (it lags), the spool can: the hook reads
# the last bytes of the newest segments and finds the session's newest line there.

from __future__ import annotations

import os
from collections.abc import Iterator

__all__ = [
    "IGNORED_EVENTS",
    "TAIL_BYTES",
    "event_name",
    "newest_event_ns",
    "read_tail",
    "session_lines",
]

TAIL_BYTES = 1 << 20  # read at most this much of the spool's end
# Lines that do not change what a resume state says (or that SessionStart itself writes).
IGNORED_EVENTS = (b"SessionStart", b"PostCompact", b"Notification")
# The compaction's own SubagentStop (indexer.prepare.normalize.is_internal_stop) only repeats what
# the state already holds: an empty agent_type (Claude Code writes compact JSON; a line
# written by another client may have a space after the colon).
_INTERNAL_STOPS = (b'"agent_type":""', b'"agent_type": ""')
_HEAD = b'{"ctxd":1,"ts_ns":'
_EVENT_KEY = b'"hook_event_name"'


def newest_event_ns(spool_dir: str, session_id: str, budget: int = TAIL_BYTES) -> int:
    """ts_ns of the session's newest spool line that matters for its state; 0 if none is in
    the last `budget` bytes of the spool (then nothing newer than the index is known)."""
    for lines in session_lines(spool_dir, session_id, budget):
        found = _newest_in(lines)
        if found:
            return found
    return 0


def session_lines(
    spool_dir: str, session_id: str, budget: int = TAIL_BYTES
) -> Iterator[list[bytes]]:
    """The session's spool lines in the last `budget` bytes of the spool: a list per segment,
    newest segment first, each newest line first."""
    try:
        names = sorted(n for n in os.listdir(spool_dir) if n.endswith(".jsonl"))
    except OSError:
        return
    needle = session_id.encode()
    for name in reversed(names):
        if budget <= 0:
            break
        data, budget = read_tail(os.path.join(spool_dir, name), budget)
        if needle in data:
            yield [
                line
                for line in reversed(data.split(b"\n"))
                if needle in line and line.startswith(_HEAD)
            ]


def event_name(line: bytes) -> bytes:
    """The hook event of a spool line, read without decoding it."""
    # An unescaped `"hook_event_name"` occurs only as a key: inside a JSON string its quotes
    # would be escaped.
    i = line.find(_EVENT_KEY)
    if i < 0:
        return b""
    i = line.find(b'"', line.find(b":", i + len(_EVENT_KEY)) + 1)
    j = line.find(b'"', i + 1)
    return line[i + 1 : j] if 0 <= i < j else b""


def read_tail(path: str, budget: int) -> tuple[bytes, int]:
    """The last `budget` bytes of a file from its first line start on, and the budget left."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            start = max(0, size - budget)
            f.seek(start)
            data = f.read(size - start)
    except OSError:
        return b"", budget
    if start:
        data = data[data.find(b"\n") + 1 :]  # the first piece may be the end of a longer line
    return data, budget - (size - start)


def _newest_in(lines: list[bytes]) -> int:
    newest = 0
    for line in lines:
        name = event_name(line)
        if name in IGNORED_EVENTS or (name == b"SubagentStop" and _is_internal_stop(line)):
            continue
        end = line.find(b",", len(_HEAD))
        try:
            newest = max(newest, int(line[len(_HEAD) : end]))
        except ValueError:
            continue
    return newest


def _is_internal_stop(line: bytes) -> bool:
    return any(mark in line for mark in _INTERNAL_STOPS)
