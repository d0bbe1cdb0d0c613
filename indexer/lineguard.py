"""Limits a spool line must meet before it is decoded: JSON nesting depth and int64 ranges."""

from __future__ import annotations

# msgspec recurses once per nesting level; a line nested ~1,000 deep raises RecursionError,
# which no quarantine reason explains. Real hook payloads nest a few dozen levels at most.
MAX_DEPTH = 256
INT64_MAX = (1 << 63) - 1

_OPEN = frozenset(b"[{")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def nesting_error(line: bytes, limit: int = MAX_DEPTH) -> str:
    """Why `line` nests JSON deeper than `limit` ("" if it does not), without recursion.

    Cheap for ordinary lines: fewer opening brackets than the limit cannot nest that deep.
    Otherwise strings are cut out with C-speed byte operations (escaped backslashes and quotes
    first, so that every remaining quote delimits a string), and only the brackets left are
    walked. A line that is not valid JSON may be misjudged here; the decoder rejects it anyway.
    """
    if line.count(b"[") + line.count(b"{") <= limit:
        return ""
    text = line.replace(b"\\\\", b"").replace(b'\\"', b"")
    brackets = b"".join(text.split(b'"')[::2]).translate(None, _NOT_BRACKETS)
    if brackets.count(b"[") + brackets.count(b"{") <= limit:
        return ""
    depth = 0
    for c in brackets:
        if c in _OPEN:
            depth += 1
            if depth > limit:
                return f"JSON nested deeper than {limit} levels"
        else:
            depth -= 1
    return ""


def int64_error(name: str, value: int) -> str:
    """Why `value` cannot be stored as a non-negative SQLite integer ("" if it can)."""
    if 0 <= value <= INT64_MAX:
        return ""
    shown = str(value) if len(str(value)) <= 24 else str(value)[:24] + "…"
    return f"{name} {shown} is outside 0..2^63-1"
