"""Spool lines: splitting a buffer at b"\\n" and decoding whole-line envelopes (pure)."""

from __future__ import annotations

import re

import msgspec

from indexer.models import ENVELOPE_VERSION, Envelope
from indexer.spool.lineguard import int64_error, nesting_error

_ENVELOPE_DECODER = msgspec.json.Decoder(Envelope)
SEGMENT_RE = re.compile(r"\d{8}T\d{2}\.jsonl")


# A Struct rather than a frozen dataclass: one is made per spool line, and a frozen
# dataclass's __init__ cost ~0.8 µs each (a Struct's ~0.1 µs).
class RawLine(msgspec.Struct, frozen=True, gc=False):
    """One complete spool line (without its b"\\n") and where it starts in the file."""

    offset: int
    data: bytes


def split_lines(buf: bytes, base_offset: int) -> tuple[list[RawLine], int]:
    """Split `buf` (read at `base_offset`) into complete lines; return them and bytes consumed.

    Splits on b"\\n" only: str.splitlines would also break on U+2028 inside JSON strings.
    Bytes after the last b"\\n" are a partial line, not yet written (I4); they are not consumed.
    """
    lines: list[RawLine] = []
    start = 0
    find = buf.find
    while True:
        end = find(b"\n", start)
        if end < 0:
            return lines, start
        lines.append(RawLine(base_offset + start, buf[start:end]))
        start = end + 1


class LineError(ValueError):
    """A spool line that cannot be decoded; the message says why."""


# A lone UTF-16 surrogate escape (JSON.stringify writes them for broken strings, seen in
# Windows payloads of the corpus) makes msgspec reject the whole line. Such escapes are
# replaced by U+FFFD, as tiktoken and Python's "replace" error handler would.
_LONE_SURROGATE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def repair_surrogates(line: bytes) -> bytes:
    """Replace lone surrogate escapes by \\ufffd so the line decodes."""
    return _LONE_SURROGATE.sub(rb"\\ufffd", line)


# A line exactly as the hook writes it: version 1, no spaces, an optional host, the event
# (an object) last.
_WRITTEN = re.compile(
    rb'\{"ctxd":1,"ts_ns":(0|[1-9][0-9]{0,18}),"pid":(0|[1-9][0-9]{0,18}),'
    rb'(?:"host":"([a-z][a-z0-9_-]{0,31})",)?"event":(?=\{)'
)
# What a host name may be (a newer hook may name a client this version does not know: its
# events are then read as Claude Code's).
_HOST = re.compile(r"[a-z][a-z0-9_-]{0,31}")


def written_envelope(line: bytes) -> Envelope | None:
    """The envelope of a line in the hook's own layout, read without decoding the event; None
    for any other line (decode_envelope judges those, and gives the reasons).

    The event is the bytes between the header and the closing brace: the caller's payload
    decode must accept them whole (one JSON object), else the line goes to decode_envelope.
    Such a line is then exactly what decode_envelope would accept, with the same fields.
    """
    m = _WRITTEN.match(line)
    if m is None or not line.endswith(b"}}") or nesting_error(line):
        return None
    ts_ns, pid = int(m[1]), int(m[2])
    if int64_error("ts_ns", ts_ns) or int64_error("pid", pid):
        return None
    raw = msgspec.Raw(memoryview(line)[m.end() : -1])
    return Envelope(ENVELOPE_VERSION, ts_ns, pid, raw, m[3].decode() if m[3] else "")


def decode_envelope(line: bytes) -> Envelope:
    """Decode one spool line; raise LineError if it is not a complete, known envelope.

    Only a whole line is an envelope: the hook writes each line with one write, starting on a
    fresh line, so bytes in the middle of a line are payload and are never read as a record.
    The hook writes the event as the envelope's last member, so its raw bytes must end
    exactly before the closing brace; anything else means a payload fragment that happened
    to parse (for example `{}, "pid": 1`) and is rejected rather than trusted.
    """
    too_deep = nesting_error(line)
    if too_deep:
        raise LineError(too_deep)
    try:
        env = _ENVELOPE_DECODER.decode(line)
    except (msgspec.DecodeError, ValueError) as e:  # invalid UTF-8 raises UnicodeDecodeError
        # msgspec reports a lone high surrogate before a quote as "truncated", not as a
        # surrogate error: look for one whatever the message.
        repaired = repair_surrogates(line)
        if repaired == line:
            raise LineError(f"not a spool envelope: {e}") from e
        line = repaired
        try:
            env = _ENVELOPE_DECODER.decode(line)
        except (msgspec.DecodeError, ValueError) as e2:
            raise LineError(f"not a spool envelope: {e2}") from e2
    if env.ctxd != ENVELOPE_VERSION:
        raise LineError(f"unknown envelope version {env.ctxd}")
    bad_int = int64_error("ts_ns", env.ts_ns) or int64_error("pid", env.pid)
    if bad_int:
        raise LineError(bad_int)
    if env.host and not _HOST.fullmatch(env.host):
        raise LineError(f"bad host {env.host[:40]!r}")
    raw = bytes(env.event)
    tail = line.rstrip(b" \t\r")
    if not tail.endswith(b"}") or not tail[:-1].rstrip().endswith(raw):
        raise LineError("envelope event is not the last member (payload fragment?)")
    return env


def is_segment_name(name: str) -> bool:
    """True for hook-written segment names `<UTC yyyymmddThh>.jsonl`."""
    return SEGMENT_RE.fullmatch(name) is not None
