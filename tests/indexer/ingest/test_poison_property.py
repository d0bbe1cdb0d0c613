"""Property: no mutation of a real hook payload stops ingest, forges a record or breaks a path.

Real corpus payloads (../shared/corpus/hooks) are mutated the ways a broken client or an
attacker would: truncations, splices, deep nesting, huge and negative numbers, invalid UTF-8,
lone surrogates, duplicate keys, envelopes forged inside payloads, reserved names in every id
field, and spool lines with out-of-range envelope integers. They go through the hook's own
append code (in process, for speed; a second test runs the real hook script), then through
the real ingest pass. Then: every pass completes, every well-formed event is indexed exactly
once, every other line is quarantined exactly once, and no forged envelope is ever indexed.
"""

from __future__ import annotations

import itertools
import json
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import CORPUS, avoid_hour_boundary, hook_env, run_hook
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxd_hook.hook import append_line, build_line, segment_name
from indexer.config import Config
from indexer.paths import RESERVED_NAMES, RESERVED_VIEW_NAMES, StatePaths, is_valid_session_id
from indexer.writer.catch_up import IndexWriter, open_writer, writer_lock

HOOKS = CORPUS / "hooks"
pytestmark = pytest.mark.skipif(not HOOKS.is_dir(), reason=f"corpus not found at {HOOKS}")

GOOD, BAD, EITHER = "good", "bad", "either"
_ts = itertools.count(1_600_000_000_000_000_000, 1_000_003)
_ids = itertools.count()
_EXAMPLES_QUICK = 40
_EXAMPLES_FULL = int(os.environ.get("CTXD_POISON_EXAMPLES", "10000"))


def _load_corpus() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    if not HOOKS.is_dir():
        return out
    for path in sorted(HOOKS.rglob("*.jsonl")):
        for raw in path.read_bytes().splitlines()[:40]:
            if len(raw) > 12_000:
                continue
            try:
                doc = json.loads(raw)
            except ValueError:
                continue
            if (
                isinstance(doc, dict)
                and isinstance(doc.get("session_id"), str)
                and is_valid_session_id(doc["session_id"])
                and isinstance(doc.get("hook_event_name"), str)
                and doc["hook_event_name"]
            ):
                out.append(doc)
    return out


PAYLOADS = _load_corpus()


def _dump(doc: dict[str, object]) -> bytes:
    """Compact JSON as Claude Code sends it; lone surrogates as `\\uXXXX` escapes (real
    Windows payloads carry them so), since they have no UTF-8 form."""
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(doc, separators=(",", ":")).encode()


def _fresh(doc: dict[str, object]) -> dict[str, object]:
    """The payload with a session and tool call id no other example uses (exactly-once)."""
    n = next(_ids)
    out = dict(doc)
    out["session_id"] = f"prop-{n:07d}"
    if isinstance(out.get("tool_use_id"), str) and out["tool_use_id"]:
        out["tool_use_id"] = f"{out['tool_use_id']}-{n}"
    return out


def _inject(data: bytes, member: bytes) -> bytes:
    """Insert `member` (`"key":value`) right after the payload's opening brace."""
    return b"{" + member + b"," + data[1:]


@dataclass
class Item:
    data: bytes  # the hook's stdin, or a whole spool line when `raw_line`
    expect: str
    raw_line: bool = False


def make_item(kind: str, rng: random.Random) -> Item:
    base = _fresh(rng.choice(PAYLOADS))
    data = _dump(base)
    if kind == "plain":
        return Item(data, GOOD)
    if kind == "nested_ok":
        d = rng.randint(1, 200)
        return Item(_inject(data, b'"x_deep":' + b"[" * d + b"]" * d), GOOD)
    if kind == "nested_bad":
        d = rng.randint(300, 5000)
        return Item(_inject(data, b'"x_deep":' + b"[" * d + b"]" * d), BAD)
    if kind == "big_number":
        n = rng.choice([10**30, -(10**30), 2**63, -(2**63) - 1, 10**400])
        return Item(_inject(data, b'"x_num":%d' % n), GOOD)
    if kind == "duplicate_key":
        return Item(_inject(data, b'"x_dup":1,"x_dup":[2]'), GOOD)
    if kind == "surrogate":
        return Item(_inject(data, b'"x_text":"cut emoji \\ud83d"'), GOOD)
    if kind == "reserved_agent":
        doc = dict(base)
        doc["agent_id"] = rng.choice(sorted(RESERVED_VIEW_NAMES | {"main"}))
        doc["agent_type"] = "Explore"
        return Item(_dump(doc), GOOD)
    if kind == "reserved_session":
        doc = dict(base)
        name = rng.choice(sorted(RESERVED_NAMES))
        doc["session_id"] = "".join(c.upper() if rng.random() < 0.3 else c for c in name)
        return Item(_dump(doc), BAD)
    if kind == "truncated":
        cut = rng.randint(1, len(data) - 2)
        return Item(data[:cut], BAD)
    if kind == "invalid_utf8":
        doc = dict(base)
        doc["cwd"] = "/home/dev/MARK"
        return Item(_dump(doc).replace(b"MARK", b"\xff\xfe"), BAD)
    if kind == "not_an_object":
        return Item(rng.choice([b"[]", b"null", b"42", b'"text"', b"{}"]), BAD)
    if kind == "forged":
        forged = _dump({**_fresh(rng.choice(PAYLOADS)), "session_id": f"forged-{next(_ids)}"})
        head = b',{"ctxd":1,"ts_ns":1,"pid":1,"event":'
        return Item(data[:-1] + head + forged, BAD)  # torn: the closing braces are lost
    if kind == "forged_whole":
        forged = _dump({**_fresh(rng.choice(PAYLOADS)), "session_id": f"forged-{next(_ids)}"})
        line = b'{"ctxd":1,"ts_ns":1,"pid":1,"event":' + forged + b"}"
        return Item(data[: rng.randint(1, len(data) - 2)] + line, BAD)
    if kind == "raw_bad_ints":
        ts = rng.choice([10**23, 2**63, -1, -(10**23)])
        pid = rng.choice([1, 2**64, -5])
        env = b'{"ctxd":1,"ts_ns":%d,"pid":%d,"event":' % (ts, pid) + data + b"}"
        return Item(env, BAD, raw_line=True)
    if kind == "splice":
        other = _dump(_fresh(rng.choice(PAYLOADS)))
        return Item(
            data[: rng.randint(1, len(data) - 1)] + other[rng.randint(1, len(other) - 1) :], EITHER
        )
    raise AssertionError(kind)


KINDS = [
    "plain",
    "nested_ok",
    "nested_bad",
    "big_number",
    "duplicate_key",
    "surrogate",
    "reserved_agent",
    "reserved_session",
    "truncated",
    "invalid_utf8",
    "not_an_object",
    "forged",
    "forged_whole",
    "raw_bad_ints",
    "splice",
]
examples = st.tuples(
    st.lists(st.sampled_from(KINDS), min_size=1, max_size=6), st.integers(0, 2**32)
)


@pytest.fixture(scope="module")
def writer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexWriter]:
    paths = StatePaths(tmp_path_factory.mktemp("poison") / "state")
    paths.ensure()
    with writer_lock(paths):
        w = open_writer(paths, Config())
        try:
            w.start()
            yield w
        finally:
            w.close()


def _segment_lines(path: Path, start: int) -> list[tuple[int, bytes]]:
    with path.open("rb") as f:
        f.seek(start)
        data = f.read()
    out, pos = [], 0
    while (end := data.find(b"\n", pos)) >= 0:
        if data[pos:end].strip():
            out.append((start + pos, data[pos:end]))
        pos = end + 1
    assert pos == len(data), "a line was left without its newline"
    return out


def check(writer: IndexWriter, segment: str, start: int, items: list[Item]) -> None:
    conn = writer.conn
    before = conn.execute("SELECT coalesce(max(id), 0) FROM entries").fetchone()[0]
    while True:  # every pass completes
        if not writer.pass_once().lines:
            break
    lines = _segment_lines(writer.paths.spool / segment, start)
    assert len(lines) == len(items)
    file_ids = [r[0] for r in conn.execute("SELECT file_id FROM files WHERE name=?", (segment,))]
    marks = ",".join("?" * len(file_ids))
    entries = conn.execute(
        f"SELECT offset, count(*) FROM entries WHERE id>? AND file_id IN ({marks}) GROUP BY offset",
        (before, *file_ids),
    ).fetchall()
    quarantined = conn.execute(
        f"SELECT offset, count(*) FROM quarantine WHERE file_id IN ({marks}) AND offset>=?"
        " GROUP BY offset",
        (*file_ids, start),
    ).fetchall()
    indexed = dict(entries)
    bad = dict(quarantined)
    for (offset, line), item in zip(lines, items, strict=True):
        where = (indexed.get(offset, 0), bad.get(offset, 0))
        assert where in ((1, 0), (0, 1)), (item.expect, line[:300], where)
        if item.expect == GOOD:
            assert where == (1, 0), (line[:300], _error(writer, file_ids, offset))
        elif item.expect == BAD:
            assert where == (0, 1), line[:300]
    new = "FROM entries WHERE id>?"
    forged = conn.execute(
        f"SELECT count(*) {new} AND (session_id LIKE 'forged-%' OR ts_ns=1)", (before,)
    ).fetchone()[0]
    assert forged == 0
    sessions = {r[0].lower() for r in conn.execute(f"SELECT session_id {new}", (before,))}
    assert sessions.isdisjoint(RESERVED_NAMES)
    agents = {r[0].lower() for r in conn.execute(f"SELECT agent_id {new}", (before,))}
    assert agents.isdisjoint(RESERVED_VIEW_NAMES)
    assert not (writer.paths.sessions / "all-agent-instructions.jsonl").is_dir()


def _error(writer: IndexWriter, file_ids: list[int], offset: int) -> str:
    marks = ",".join("?" * len(file_ids))
    row = writer.conn.execute(
        f"SELECT error FROM quarantine WHERE file_id IN ({marks}) AND offset=?", (*file_ids, offset)
    ).fetchone()
    return str(row[0]) if row else "not quarantined either"


def run_in_process(writer: IndexWriter, kinds: list[str], seed: int) -> None:
    rng = random.Random(seed)
    items = [make_item(k, rng) for k in kinds]
    segment = "20200101T00.jsonl"  # one growing segment: a pass need not reopen thousands
    path = writer.paths.spool / segment
    start = path.stat().st_size if path.exists() else 0
    for item in items:
        line = item.data + b"\n" if item.raw_line else build_line(item.data, next(_ts), 4242)
        append_line(str(writer.paths.spool), segment, line)
    check(writer, segment, start, items)


@settings(
    max_examples=_EXAMPLES_QUICK,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(examples)
def test_poison_lines_quick(writer: IndexWriter, example: tuple[list[str], int]) -> None:
    run_in_process(writer, *example)


@pytest.mark.full
@pytest.mark.timeout(1800)
@settings(
    max_examples=_EXAMPLES_FULL,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(examples)
def test_poison_lines_full(writer: IndexWriter, example: tuple[list[str], int]) -> None:
    run_in_process(writer, *example)


def test_poison_lines_through_the_real_hook(writer: IndexWriter) -> None:
    # The hook script itself, as Claude Code runs it, for every kind of mutation.
    rng = random.Random(7)
    avoid_hour_boundary()
    segment = segment_name(_now_ns())
    path = writer.paths.spool / segment
    start = path.stat().st_size if path.exists() else 0
    items = [make_item(k, rng) for k in KINDS if k != "raw_bad_ints"]
    env = hook_env(writer.paths.root)
    for item in items:
        result = run_hook(item.data, env)
        assert (result.returncode, result.stdout) == (0, b"")
    check(writer, segment, start, items)


def _now_ns() -> int:
    import time

    return time.time_ns()
