"""Limits a spool line must meet before it is decoded: JSON nesting depth and int64 ranges."""

from __future__ import annotations

# msgspec recurses once per nesting level; a line nested ~1,000 deep raises RecursionError,
# which no quarantine reason explains. Real hook payloads nest a few dozen levels at most.
MAX_DEPTH = 256
INT64_MAX = (1 << 63) - 1

_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_NOT_OPENING = bytes(b for b in range(256) if b not in b"[{")
_PARENS = bytes.maketrans(b"[{]}", b"(())")
# Below ~32 bytes per quote, replacing the escapes of the whole line beats a loop over its
# quotes (measured on the corpus lines with more than 256 brackets).
_BYTES_PER_WALKED_QUOTE = 32


def nesting_error(line: bytes, limit: int = MAX_DEPTH) -> str:
    """Why `line` nests JSON deeper than `limit` ("" if it does not), without recursion.

    Cheap for ordinary lines: fewer opening brackets than the limit cannot nest that deep
    (counted in one C pass). Otherwise strings are cut out (a quote after an odd run of
    backslashes is escaped), and the depth of the brackets left is found by removing the
    innermost pairs, one level per round. A line that is not valid JSON may be misjudged
    here; the decoder rejects it anyway.
    """
    if len(line) <= limit or len(line.translate(None, _NOT_OPENING)) <= limit:
        return ""
    parens = _outside_strings(line).translate(_PARENS, _NOT_BRACKETS)
    if parens.count(b"(") <= limit:
        return ""
    # Balanced brackets: each round removes every innermost pair, so the rounds needed to
    # empty them are their depth (a Python walk over thousands of brackets cost ~0.5 ms).
    # Anything else (brackets not balanced, or deeper than the limit: not JSON, or an attack)
    # is walked one bracket at a time, which is what decides.
    rounds, left = 0, parens
    while left:
        inner = left.replace(b"()", b"")
        rounds += 1
        if len(inner) == len(left) or rounds > limit:
            return _walk(parens, limit)
        left = inner
    return ""


def _outside_strings(line: bytes) -> bytes:
    """The bytes of line outside its JSON strings (the quotes and escaped quotes dropped)."""
    parts = line.split(b'"')
    if len(parts) * _BYTES_PER_WALKED_QUOTE > len(line):
        # Escaped backslashes, then escaped quotes, out: every quote left delimits a string.
        text = line.replace(b"\\\\", b"").replace(b'\\"', b"")
        return b"".join(text.split(b'"')[::2])
    # Few quotes (a large line is mostly a few long strings): each quote is judged by the
    # backslashes before it.
    kept, inside = [], False
    for part in parts:
        if not inside:
            kept.append(part)
        if (len(part) - len(part.rstrip(b"\\"))) % 2 == 0:  # an unescaped quote follows
            inside = not inside
    return b"".join(kept)


def _walk(parens: bytes, limit: int) -> str:
    """The depth check of brackets (`(` opens, `)` closes), one at a time."""
    depth = 0
    for c in parens:
        if c == 0x28:  # "("
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
