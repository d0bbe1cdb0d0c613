"""Tests for indexer.spool.lines: line splitting (I4), envelope decoding (pure)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxd_hook.hook import build_line
from indexer.spool.lines import (
    LineError,
    decode_envelope,
    is_segment_name,
    split_lines,
)

TS_NS = 1_755_009_022_123_456_789
PAYLOAD = {
    "session_id": "3651203b-2f8d-479f-b134-933aea48551e",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_use_id": "toolu_01",
    "tool_input": {"command": "ls -la", "description": "List files"},
}


def envelope(payload: object = PAYLOAD, ts_ns: int = TS_NS, pid: int = 4242) -> bytes:
    """One spool line exactly as the hook writes it, without its b"\\n"."""
    line = build_line(json.dumps(payload, ensure_ascii=False).encode(), ts_ns, pid)
    assert line.endswith(b"\n")
    return line[:-1]


# --- split_lines -------------------------------------------------------------------------


def test_split_lines_complete_lines_and_offsets() -> None:
    lines, consumed = split_lines(b"ab\ncde\n\nf\n", 100)
    assert [(r.offset, r.data) for r in lines] == [
        (100, b"ab"),
        (103, b"cde"),
        (107, b""),
        (108, b"f"),
    ]
    assert consumed == 10


def test_split_lines_partial_tail_is_not_consumed() -> None:
    lines, consumed = split_lines(b'{"a":1}\n{"ctxd":1,"ts_', 0)
    assert [r.data for r in lines] == [b'{"a":1}']
    assert consumed == 8


def test_split_lines_no_newline_consumes_nothing() -> None:
    assert split_lines(b'{"ctxd":1,"ts_ns":', 7) == ([], 0)
    assert split_lines(b"", 7) == ([], 0)


def test_split_lines_unicode_line_separators_inside_json_are_not_breaks() -> None:
    # U+2028/U+2029, NEL, VT, FF and CR all break str.splitlines, not a JSON line.
    text = {"prompt": "one\u2028two\u2029three\x85four\x0bfive\x0csix\rseven"}
    line = envelope({**PAYLOAD, **text})
    assert "\u2028".encode() in line
    lines, consumed = split_lines(line + b"\n" + line + b"\n", 0)
    assert [r.data for r in lines] == [line, line]
    assert consumed == 2 * (len(line) + 1)
    env = decode_envelope(lines[0].data)
    assert json.loads(bytes(env.event))["prompt"] == text["prompt"]


@given(st.binary(max_size=400), st.integers(min_value=0, max_value=1 << 40))
def test_split_lines_round_trip(buf: bytes, base: int) -> None:
    lines, consumed = split_lines(buf, base)
    rest = buf[consumed:]
    assert b"".join(r.data + b"\n" for r in lines) + rest == buf
    assert b"\n" not in rest
    assert all(b"\n" not in r.data for r in lines)
    assert all(buf[r.offset - base : r.offset - base + len(r.data)] == r.data for r in lines)
    assert consumed == (buf.rfind(b"\n") + 1)


@given(st.lists(st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"")), max_size=20))
def test_split_lines_of_joined_lines(parts: list[bytes]) -> None:
    buf = b"".join(p + b"\n" for p in parts)
    lines, consumed = split_lines(buf, 0)
    assert [r.data for r in lines] == parts
    assert consumed == len(buf)


# --- decode_envelope ---------------------------------------------------------------------


def test_decode_envelope_valid() -> None:
    env = decode_envelope(envelope())
    assert (env.ctxd, env.ts_ns, env.pid) == (1, TS_NS, 4242)
    assert json.loads(bytes(env.event)) == PAYLOAD


def test_decode_envelope_accepts_raw_newlines_replaced_by_the_hook() -> None:
    pretty = json.dumps(PAYLOAD, indent=2).encode()
    assert b"\n" in pretty
    line = build_line(pretty + b"\r\n", TS_NS, 1)
    assert line.count(b"\n") == 1
    assert json.loads(bytes(decode_envelope(line[:-1]).event)) == PAYLOAD


def test_decode_envelope_tolerates_trailing_whitespace() -> None:
    env = decode_envelope(envelope() + b" \r")
    assert env.ts_ns == TS_NS


@pytest.mark.parametrize(
    ("line", "message"),
    [
        pytest.param(
            b'{"ctxd":2,"ts_ns":1,"pid":2,"event":{}}', "unknown envelope version 2", id="version"
        ),
        pytest.param(
            b'{"ctxd":0,"ts_ns":1,"pid":2,"event":{}}', "unknown envelope version 0", id="version-0"
        ),
        pytest.param(
            # The tail of a torn payload that happens to parse: `event` is not the last member.
            b'{"ctxd":1,"ts_ns":1,"pid":2,"event":{"a":1},"pid":3}',
            "not the last member",
            id="fragment-pid-after-event",
        ),
        pytest.param(
            b'{"ctxd":1,"ts_ns":1,"pid":2,"event":{"a":1},"extra":{"b":2}}',
            "not the last member",
            id="fragment-member-after-event",
        ),
        pytest.param(
            b'{"ctxd":1,"ts_ns":1,"pid":2,"event":{"a":1}', "not a spool envelope", id="torn"
        ),
        pytest.param(b'{"ctxd":1,"ts_ns":1,"pid":2}', "not a spool envelope", id="no-event"),
        pytest.param(
            b'{"ctxd":"1","ts_ns":1,"pid":2,"event":{}}', "not a spool envelope", id="wrong-type"
        ),
        pytest.param(b'{"session_id":"s","hook_event_name":"Stop"}', "not a spool", id="bare"),
        pytest.param(b"[1,2,3]", "not a spool envelope", id="array"),
        pytest.param(b"\x00\x01\xfe\xff binary", "not a spool envelope", id="binary"),
        pytest.param(
            b'\xef\xbb\xbf{"ctxd":1,"ts_ns":1,"pid":2,"event":{}}', "not a spool", id="bom"
        ),
        pytest.param(b"", "not a spool envelope", id="empty"),
    ],
)
def test_decode_envelope_rejects(line: bytes, message: str) -> None:
    with pytest.raises(LineError, match=message):
        decode_envelope(line)


@pytest.mark.parametrize(
    "line",
    [
        b'{"ctxd":1,"ts_ns":1,"pid":2,"event":{"tool_input":{"command":"\xff\xfe"}}}',
        b'{"ctxd":1,"ts_ns":1,"pid":2,"event":{"prompt":"caf\xc3"}}',
    ],
    ids=["invalid-utf8-in-raw-event", "truncated-utf8-sequence"],
)
def test_invalid_utf8_in_the_event_is_left_to_the_payload_check(line: bytes) -> None:
    # The event is Raw here; ingest validates what it decodes and the raw part it stores
    # (test_ingest's invalid-utf8 cases), so the envelope check stays off the whole line.
    assert decode_envelope(line).pid == 2


def test_decode_envelope_fragment_glued_to_a_record_is_rejected() -> None:
    # A hook killed mid-write left `{"ctxd":1,…"tool_inp`; the next hook appended right after.
    good = envelope()
    fragment = envelope(ts_ns=TS_NS - 1)[:57]
    with pytest.raises(LineError):
        decode_envelope(fragment + good)


# --- segment names -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("20261122T03.jsonl", True),
        ("19700101T00.jsonl", True),
        ("20261122T03.jsonl.1", False),
        ("20261122T3.jsonl", False),
        ("20261122-03.jsonl", False),
        ("x20261122T03.jsonl", False),
        ("20261122T03.json", False),
    ],
)
def test_is_segment_name(name: str, ok: bool) -> None:
    assert is_segment_name(name) is ok
