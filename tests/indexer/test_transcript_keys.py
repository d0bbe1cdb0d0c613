"""Imported events that share a millisecond and the hash part of their key are all stored once."""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import time
from pathlib import Path

from indexer.paths import StatePaths
from indexer.transcript_import import ImportStats, TranscriptImporter
from indexer.transcript_records import Converter
from indexer.writer import open_writer, writer_lock

STAMP = "2026-03-01T10:00:00.123Z"


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
    paths = StatePaths(state)
    with writer_lock(paths):
        writer = open_writer(paths)
        try:
            writer.start()
            importer = TranscriptImporter(writer)
            total = ImportStats()
            for f in files:
                total.add(importer.import_file(f))
            return total
        finally:
            writer.close()


def _prompts(state: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(state / "index.db") as conn:
        rows = conn.execute(
            "SELECT session_id, text FROM entries WHERE hook_event='UserPromptSubmit' ORDER BY 2"
        )
        return [(r[0], r[1]) for r in rows]


def test_two_events_with_one_key_in_one_file_are_both_stored(tmp_path: Path) -> None:
    session = "5b1e7a9e-0000-4000-8000-000000000001"
    a, b = _colliding(session, session)
    assert _key(a) == _key(b) and a["uuid"] != b["uuid"]  # the case under test
    stats = _import(tmp_path / ".ctxd", [_write(tmp_path / "s.jsonl", [a, b])])
    assert _prompts(tmp_path / ".ctxd") == [(session, "first prompt"), (session, "second prompt")]
    assert (stats.entries, stats.duplicates) == (2, 0)


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
