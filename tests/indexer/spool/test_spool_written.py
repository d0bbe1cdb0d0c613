"""Lines in the hook's own layout, read without the envelope decode, give what the full
decode gives: the same fields and event, and every other line still goes to the full decode."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxd_hook.hook import build_line
from indexer.models import HookPayload
from indexer.spool.lines import LineError, decode_envelope, written_envelope
from tests.helpers import CORPUS

_PAYLOAD = msgspec.json.Decoder(HookPayload)


def full(line: bytes) -> tuple[Any, ...]:
    """What ingest made of a line before: the envelope decode, then the payload decode."""
    try:
        env = decode_envelope(line)
    except LineError as e:
        return ("bad line", str(e))
    try:
        payload = _PAYLOAD.decode(env.event)
    except (msgspec.DecodeError, ValueError) as e:
        return ("bad payload", bytes(env.event), str(e))
    return ("ok", env.ctxd, env.ts_ns, env.pid, bytes(env.event), payload)


def fast_then_full(line: bytes) -> tuple[Any, ...]:
    """What ingest makes of it now (indexer.ingest.lines: the written layout first)."""
    env = written_envelope(line)
    if env is not None:
        try:
            payload = _PAYLOAD.decode(env.event)
        except (msgspec.DecodeError, ValueError):
            return full(line)
        return ("ok", env.ctxd, env.ts_ns, env.pid, bytes(env.event), payload)
    return full(line)


_EVENT = {"session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "Bash"}


def test_hook_written_lines_take_the_fast_path() -> None:
    line = build_line(json.dumps(_EVENT).encode(), 1_790_000_000_000_000_000, 4242)[:-1]
    env = written_envelope(line)
    assert env is not None and (env.ts_ns, env.pid) == (1_790_000_000_000_000_000, 4242)
    assert fast_then_full(line) == full(line)


@pytest.mark.skipif(not (CORPUS / "hooks").is_dir(), reason="needs the hook corpus")
def test_corpus_lines_read_the_same() -> None:
    n = 0
    for path in sorted((CORPUS / "hooks").rglob("*.jsonl")):
        for raw in path.read_bytes().splitlines():
            line = build_line(raw, 1_700_000_000_000_000_000 + n, 100 + n)[:-1].lstrip(b"\n")
            assert fast_then_full(line) == full(line)
            n += 1
    assert n > 1000


_HEADERS = [
    b'{"ctxd":1,"ts_ns":%s,"pid":%s,"event":',
    b'{"ctxd":2,"ts_ns":%s,"pid":%s,"event":',
    b'{"ctxd":1, "ts_ns":%s,"pid":%s,"event":',
    b'{"ctxd":1,"ts_ns":%s,"pid":%s,"event": ',
    b'{"ctxd":1,"pid":%s,"ts_ns":%s,"event":',
]
_NUMBERS = st.sampled_from(
    [
        b"0",
        b"7",
        b"01",
        b"-1",
        b"1.5",
        b"9223372036854775807",
        b"9223372036854775808",
        b"18446744073709551616",
        b"99999999999999999999",
        b"1e3",
        b'"1"',
    ]
)
_EVENTS = st.sampled_from(
    [
        json.dumps(_EVENT).encode(),
        b'{"session_id":"s1","hook_event_name":"Stop","x":[1,{"y":"\\ud83d"}]}',
        b'{"session_id":"s1","hook_event_name":"Stop"} ',
        b'{"session_id":"s1"},"ctxd":2',
        b'{"session_id":"s1"}, "pid": 1',
        b"[1,2]",
        b'"text"',
        b'{"session_id":"s1","prompt":"caf\xc3\xa9"}',
        b'{"session_id":"s1","prompt":"bad \xff utf8"}',
        b'{"session_id":"s1","x":"bad \xff in a skipped field"}',
        b'{"session_id":"s1","prompt":"lone \\udc00"}',
        b'{"session_id":"s1","prompt":"unterminated}',
        b'{"session_id":"s1","session_id":"dup"}',
        b'{"a":' + b"[" * 300 + b"]" * 300 + b"}",
        b"{}",
    ]
)
_TAILS = st.sampled_from([b"}", b"} ", b"}\r", b"", b"}}", b",}", b" }"])


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_HEADERS), _NUMBERS, _NUMBERS, _EVENTS, _TAILS)
def test_any_line_reads_as_the_full_decode_reads_it(
    header: bytes, ts: bytes, pid: bytes, event: bytes, tail: bytes
) -> None:
    line = header % (ts, pid) + event + tail
    assert fast_then_full(line) == full(line)
