"""Limits a spool line must meet before it is decoded: JSON nesting depth and int64 ranges."""

from __future__ import annotations

import re

# msgspec recurses once per nesting level; a line nested ~1,000 deep raises RecursionError,
# which no quarantine reason explains. Real hook payloads nest a few dozen levels at most.
MAX_DEPTH = 256
INT64_MAX = (1 << 63) - 1

# A JSON string (with its escapes): brackets inside strings do not nest anything.
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(rb"[\[\]{}]")


def nesting_error(line: bytes, limit: int = MAX_DEPTH) -> str:
    """Why `line` nests JSON deeper than `limit` ("" if it does not), without recursion.

    Cheap for ordinary lines: fewer opening brackets than the limit cannot nest that deep, so
    the exact scan (strings removed, brackets counted in one loop) only runs on lines with many.
    """
    if line.count(b"[") + line.count(b"{") <= limit:
        return ""
    depth = 0
    for m in _BRACKETS.finditer(_STRING.sub(b'""', line)):
        if m.group() in (b"[", b"{"):
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
