"""Imported events that share a millisecond and the hash part of their key are all stored once."""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import time
from pathlib import Path

from helpers import import_transcripts

from indexer.transcripts.records import Converter
from indexer.writer.importer import ImportStats

STAMP = "2026-03-01T10:00:00.123Z"
CALLS_UUID = "00000000-0000-4000-8000-0000000000a1"
RESULTS_UUID = "00000000-0000-4000-8000-0000000000a2"


def _prompt(uuid: str, session: str, text: str) -> dict[str, object]:
    return {
        "type": "user",
        "uuid": uuid,
        "sessionId": session,
        "timestamp": STAMP,
        "cwd": "/work/project",
        "message": {"role": "user", "content": text},
    }


def _key(record: dict[str, object]) -> int:
    """The ts_ns the import gives the record's event (its key with pid 0)."""
    [event] = Converter("t.jsonl").convert(json.dumps(record).encode(), 0, 1)
    return event.ts_ns


def _colliding(session_a: str, session_b: str) -> tuple[dict[str, object], dict[str, object]]:
    """Two different prompts of the same millisecond whose keys are equal (found by search:
    20 bits of hash per millisecond, so a pair turns up within a few thousand records)."""
    seen: dict[int, int] = {}
    for i in itertools.count():
        key = _key(_prompt(f"00000000-0000-4000-8000-{i:012x}", session_a, "same"))
        if key in seen:
            a = _prompt(f"00000000-0000-4000-8000-{seen[key]:012x}", session_a, "first prompt")
            b = _prompt(f"00000000-0000-4000-8000-{i:012x}", session_b, "second prompt")
            return a, b
        seen[key] = i
    raise AssertionError("unreachable")


def _write(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    old = time.time() - 86400  # a finished session: nothing is held back for a turn's end
    os.utime(path, (old, old))
    return path


def _import(state: Path, files: list[Path]) -> ImportStats:
    stats: ImportStats = import_transcripts(state, files)
    return stats


def _prompts(state: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(state / "index.db") as conn:
        rows = conn.execute(
            "SELECT session_id, text FROM entries WHERE hook_event='UserPromptSubmit' ORDER BY 2"
        )
        return [(r[0], r[1]) for r in rows]


def _calls(session: str, ids: tuple[str, ...]) -> list[dict[str, object]]:
    """Bash calls made at once and their results, each in one record (as Claude Code writes
    parallel tool calls)."""
    base = {"sessionId": session, "timestamp": STAMP, "cwd": "/work/project"}
    calls = [{"type": "tool_use", "id": i, "name": "Bash", "input": {"command": i}} for i in ids]
    results = [{"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in ids]
    assistant = {"role": "assistant", "content": calls}
    user = {"role": "user", "content": results}
    return [
        {**base, "type": "assistant", "uuid": CALLS_UUID, "message": assistant},
        {**base, "type": "user", "uuid": RESULTS_UUID, "message": user},
    ]


def _keys(records: list[dict[str, object]]) -> list[int]:
    """The ts_ns the import gives the records' events."""
    converter = Converter("t.jsonl")
    lines = [json.dumps(r).encode() for r in records]
    return [e.ts_ns for i, line in enumerate(lines, 1) for e in converter.convert(line, 0, i)]


def _colliding_calls(session: str) -> tuple[str, str]:
    """Ids of parallel calls whose two PostToolUse events have equal keys (found by search)."""
    seen: dict[int, str] = {}
    for i in itertools.count():
        call = f"toolu_{i:024x}"
        [key] = _keys(_calls(session, (call,)))  # a result's key does not depend on the others
        if key in seen:
            return seen[key], call
        seen[key] = call
    raise AssertionError("unreachable")


def test_parallel_results_with_one_key_are_both_stored(tmp_path: Path) -> None:
    session = "5b1e7a9e-0000-4000-8000-000000000001"
    calls = _colliding_calls(session)
    records = _calls(session, calls)
    first, second = _keys(records)
    assert first == second  # the case under test: two events, one key
    stats = _import(tmp_path / ".ctxd", [_write(tmp_path / "s.jsonl", records)])
    assert (stats.entries, stats.duplicates) == (2, 0)
    with sqlite3.connect(tmp_path / ".ctxd" / "index.db") as conn:
        stored = conn.execute(
            "SELECT tool_use_id, ts_ns FROM entries WHERE hook_event='PostToolUse' ORDER BY 1"
        ).fetchall()
    assert [t for t, _ in stored] == sorted(calls)
    assert len({ts for _, ts in stored}) == 2
    # Read again from the start (the file replaced): both are known, nothing is added.
    again = _import(tmp_path / ".ctxd", [_write(tmp_path / "copy.jsonl", records)])
    assert (again.entries, again.duplicates) == (0, 2)


def test_an_event_whose_key_an_earlier_import_holds_is_stored_and_once(tmp_path: Path) -> None:
    one, two = "5b1e7a9e-0000-4000-8000-00000000000a", "5b1e7a9e-0000-4000-8000-00000000000b"
    a, b = _colliding(one, two)
    state = tmp_path / ".ctxd"
    _import(state, [_write(tmp_path / "one.jsonl", [a])])
    stats = _import(state, [_write(tmp_path / "two.jsonl", [b])])
    assert stats.entries == 1
    want = [(one, "first prompt"), (two, "second prompt")]
    assert _prompts(state) == want
    # Both records again in another file (as in a pre-compaction backup): nothing new.
    again = _import(state, [_write(tmp_path / "backup.jsonl", [b, a])])
    assert (again.entries, again.duplicates) == (0, 2)
    assert _prompts(state) == want
