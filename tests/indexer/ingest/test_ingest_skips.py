"""Lines the ingest pass skips, on real files and real SQLite: what is kept, counted and logged.

An oversize line or an abandoned partial tail is quarantined and passed over; an entry that
cannot be stored goes to quarantine alone; a segment that vanishes is reported. Each case
checks the counts of the pass, the quarantine rows and the line numbers after the skip.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import sqlite3
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ctxd_hook.hook import build_line
from indexer.config import Config, IngestConfig
from indexer.index import store
from indexer.index.transactions import transaction
from indexer.ingest import batch_store
from indexer.ingest import ingestor as ingest
from indexer.ingest import lines as ingest_lines
from indexer.ingest.ingestor import Ingestor
from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up, open_writer, writer_lock
from indexer.writer.importer import TranscriptImporter

SEALED = "20200101T00.jsonl"  # an hour long past: no hook appends to it any more
SESSION = "0f6a6c8e-1b2d-4c3e-9f40-5a6b7c8d9e01"
T0 = 1_900_000_000.0


def _state(tmp_path: Path) -> StatePaths:
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    return paths


def _line(n: int, **extra: Any) -> bytes:
    event = {"session_id": SESSION, "hook_event_name": "UserPromptSubmit", "prompt": f"p{n}"}
    event.update(extra)
    return build_line(json.dumps(event, separators=(",", ":")).encode(), 1_600_000_000 + n, 7)


def _rows(paths: StatePaths, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{paths.index_db}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _offsets(lines: list[bytes]) -> list[int]:
    out, at = [], 0
    for data in lines:
        out.append(at)
        at += len(data)
    return out


def test_oversize_lines_are_counted_numbered_and_logged_where_they_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    paths = _state(tmp_path)
    config = Config(ingest=IngestConfig(max_line_bytes=4096, batch_bytes=4096))
    lines = [
        _line(1),
        _line(2, prompt="x" * 20_000),
        _line(3, prompt="y" * 30_000),
        b"not JSON at all\n",
        _line(5),
    ]
    (paths.spool / SEALED).write_bytes(b"".join(lines))
    at = _offsets(lines)
    with caplog.at_level(logging.WARNING, logger="ctxd.ingest"):
        stats = catch_up(paths, config).stats
    assert (stats.lines, stats.entries, stats.quarantined) == (5, 2, 3)
    rows = _rows(paths, "SELECT name, offset, line_no, error FROM quarantine ORDER BY offset")
    assert [r[:3] for r in rows] == [(SEALED, at[1], 2), (SEALED, at[2], 3), (SEALED, at[3], 4)]
    assert rows[0][3] == f"line exceeds [ingest] max_line_bytes ({len(lines[1]) - 1} bytes)"
    assert rows[1][3] == f"line exceeds [ingest] max_line_bytes ({len(lines[2]) - 1} bytes)"
    assert _rows(paths, "SELECT line_no, text FROM entries ORDER BY id") == [(1, "p1"), (5, "p5")]
    assert [r.getMessage() for r in caplog.records if r.getMessage().startswith("quarantined")][
        :2
    ] == [
        f"quarantined {SEALED} at offset {at[1]}: {rows[0][3]}",
        f"quarantined {SEALED} at offset {at[2]}: {rows[1][3]}",
    ]


def _partial_pass(paths: StatePaths, name: str, grace_s: float, later_s: float) -> int:
    """Index a segment whose last line has no b"\\n": first sight at T0, then at T0 + later_s;
    return how many lines the second pass quarantined."""
    config = Config(ingest=IngestConfig(partial_grace_s=grace_s))
    conn = store.connect(paths.index_db)
    try:
        ingestor = Ingestor(paths, config, conn)
        assert ingestor.run_once(now=T0).quarantined == 0  # remembered, not judged
        return ingestor.run_once(now=T0 + later_s).quarantined
    finally:
        conn.close()


def test_a_partial_tail_is_quarantined_once_exactly_the_grace_period_has_passed(
    tmp_path: Path,
) -> None:
    paths = _state(tmp_path)
    (paths.spool / SEALED).write_bytes(_line(1) + _line(2)[:40])
    assert _partial_pass(paths, SEALED, 30.0, 30.0) == 1
    assert _rows(paths, "SELECT line_no, raw FROM quarantine") == [(2, _line(2)[:40])]


@pytest.mark.parametrize(
    "name",
    ["notes.jsonl", "20261399T99.jsonl"],
    ids=["not-an-hour-segment", "no-such-date"],
)
def test_a_partial_tail_in_a_segment_no_hook_appends_to_is_quarantined(
    tmp_path: Path, name: str
) -> None:
    paths = _state(tmp_path)
    (paths.spool / name).write_bytes(_line(1)[:40])
    assert _partial_pass(paths, name, 5.0, 6.0) == 1


def test_an_entry_that_cannot_be_stored_is_quarantined_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    paths = _state(tmp_path)
    lines = [_line(n) for n in (1, 2, 3, 4)]
    (paths.spool / SEALED).write_bytes(b"".join(lines))
    real = ingest.guarded_line

    def unstorable(batch: Any, raw: Any, line_no: int, *args: Any) -> None:
        # A bug upstream lets a value through that SQLite cannot bind (lines 2 and 3).
        real(batch, raw, line_no, *args)
        if line_no in (2, 3):
            entry, payload = batch.pending[-1]
            batch.pending[-1] = (msgspec.structs.replace(entry, pid=2**64), payload)

    monkeypatch.setattr(ingest, "guarded_line", unstorable)
    stats = catch_up(paths, Config()).stats
    assert (stats.lines, stats.entries, stats.quarantined, stats.duplicates) == (4, 2, 2, 0)
    at = _offsets(lines)
    rows = _rows(paths, "SELECT offset, line_no, error, raw FROM quarantine ORDER BY offset")
    assert [r[:2] for r in rows] == [(at[1], 2), (at[2], 3)]
    assert all(r[2].startswith("cannot store the entry: OverflowError: ") for r in rows)
    # The raw event of the line (not its envelope) is kept for the diagnosis.
    assert [json.loads(r[3])["prompt"] for r in rows] == ["p2", "p3"]
    assert _rows(paths, "SELECT line_no, text FROM entries ORDER BY id") == [(1, "p1"), (4, "p4")]
    assert _rows(paths, "SELECT session_id, events FROM sessions") == [(SESSION, 2)]


def test_a_segment_that_vanished_unretired_is_reported_with_its_offset(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    paths = _state(tmp_path)
    (paths.spool / SEALED).write_bytes(_line(1) + _line(2))
    size = (paths.spool / SEALED).stat().st_size
    assert catch_up(paths, Config()).stats.entries == 2
    # Moved out of the spool; a symlink to it in its place is not the segment.
    moved = tmp_path / "moved.jsonl"
    os.rename(paths.spool / SEALED, moved)
    os.symlink(moved, paths.spool / "link-to-moved")
    with caplog.at_level(logging.WARNING, logger="ctxd.ingest"):
        stats = catch_up(paths, Config()).stats
    assert stats.anomalies == 1
    assert [r.getMessage() for r in caplog.records] == [
        f"spool segment {SEALED} disappeared before it was retired (indexed up to offset"
        f" {size}); any events written after that offset are lost"
    ]
    assert _rows(paths, "SELECT value FROM meta WHERE key = 'anomaly.missing'") == [("1",)]


def test_one_pass_counts_every_anomaly_and_records_when_it_ran(tmp_path: Path) -> None:
    paths = _state(tmp_path)
    other = "20200101T01.jsonl"
    (paths.spool / SEALED).write_bytes(_line(1) + _line(2))
    (paths.spool / other).write_bytes(_line(3))
    assert catch_up(paths, Config()).stats.entries == 3
    os.unlink(paths.spool / other)  # gone, unretired
    (paths.spool / SEALED).write_bytes(_line(4))  # cut shorter
    before = time.time_ns()
    stats = catch_up(paths, Config()).stats
    after = time.time_ns()
    assert (stats.anomalies, stats.entries) == (2, 1)
    [(stamp,)] = _rows(paths, "SELECT value FROM meta WHERE key = 'last_ingest_ns'")
    assert before <= int(stamp) <= after


def test_a_pass_with_lines_and_no_vanished_segment_records_when_it_ran(tmp_path: Path) -> None:
    paths = _state(tmp_path)
    before = time.time_ns()
    (paths.spool / SEALED).write_bytes(_line(1))
    assert catch_up(paths, Config()).stats.lines == 1
    [(stamp,)] = _rows(paths, "SELECT value FROM meta WHERE key = 'last_ingest_ns'")
    assert before <= int(stamp)


@pytest.mark.parametrize(
    ("line", "kept"),
    [
        # Nothing to redact: the raw bytes, escapes as written.
        (b'{"a":"say \\"hi\\"\\n"} tail', b'{"a":"say \\"hi\\"\\n"} tail'),
        # Bytes that are not UTF-8 are kept as they were: they may be the diagnosis.
        (b"bad \xff\xfe bytes", b"bad \xff\xfe bytes"),
        # A key found once the escapes are decoded; the lone surrogate an escape gives is
        # kept in its UTF-8 form (surrogatepass) rather than failing the quarantine.
        (
            b'{"k":"key=\\"AKIAZ7QWERTY4UIOP2XC\\" \\ud800"}',
            b'{"k":"key="[REDACTED:aws-access-key]" \xed\xa0\x80"}',
        ),
    ],
    ids=["escapes-kept", "invalid-utf8-kept", "redacted-with-a-lone-surrogate"],
)
def test_the_quarantine_keeps_a_bad_line_s_start_redacted(line: bytes, kept: bytes) -> None:
    assert batch_store.quarantine_raw(line) == kept


def test_the_quarantine_keeps_4096_characters_of_a_long_line() -> None:
    assert batch_store.quarantine_raw("é".encode() * 70_000) == "é".encode() * 4096


def test_a_symlink_in_the_spool_is_never_followed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    paths = _state(tmp_path)
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(_line(1))
    link = paths.spool / SEALED
    os.symlink(outside, link)
    with caplog.at_level(logging.WARNING, logger="ctxd.ingest"):
        stats = catch_up(paths, Config()).stats
    assert (stats.lines, stats.entries) == (0, 0)
    assert _rows(paths, "SELECT count(*) FROM entries") == [(0,)]
    loop = f"[Errno {errno.ELOOP}] {os.strerror(errno.ELOOP)}: {str(link)!r}"
    assert [r.getMessage() for r in caplog.records] == [f"cannot open spool segment {link}: {loop}"]


def test_a_segment_cut_shorter_is_reported_and_read_again_from_its_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    paths = _state(tmp_path)
    segment = paths.spool / SEALED
    segment.write_bytes(_line(1) + _line(2))
    indexed = segment.stat().st_size
    assert catch_up(paths, Config()).stats.entries == 2
    segment.write_bytes(_line(3))  # truncated and rewritten in place
    with caplog.at_level(logging.WARNING, logger="ctxd.ingest"):
        stats = catch_up(paths, Config()).stats
    assert (stats.anomalies, stats.entries) == (1, 1)
    assert [r.getMessage() for r in caplog.records] == [
        f"spool segment {SEALED} was truncated (offset {indexed}, size {len(_line(3))});"
        " re-reading it from 0, duplicates are absorbed by the event ids"
    ]
    assert _rows(paths, "SELECT text FROM entries ORDER BY id") == [("p1",), ("p2",), ("p3",)]


def test_a_batch_built_outside_the_spool_is_stored_with_its_quarantined_lines(
    tmp_path: Path,
) -> None:
    paths = _state(tmp_path)
    conn = store.connect(paths.index_db)
    try:
        with transaction(conn):
            state = store.new_file(conn, "import-1.jsonl", 1, 2, "new", 3)
        batch = ingest_lines.Batch(state)
        batch.quarantine(100, 7, "not a transcript record", b"{oops")
        with transaction(conn):
            Ingestor(paths, Config(), conn).store_batch(batch)
    finally:
        conn.close()
    assert batch.stats.quarantined == 1
    assert _rows(paths, "SELECT name, offset, line_no, error, raw FROM quarantine") == [
        ("import-1.jsonl", 100, 7, "not a transcript record", b"{oops")
    ]


def test_events_an_imported_transcript_holds_already_count_as_duplicates(tmp_path: Path) -> None:
    session = "f32d2764-18ca-4c36-8058-6f26e915740b"
    base = {"sessionId": session, "cwd": "/p", "isSidechain": False, "userType": "external"}
    stamp = "2026-04-02T12:04:50.623Z"
    transcript = tmp_path / "t.jsonl"
    records = [
        {
            **base,
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "cb0",
            "timestamp": stamp,
            "compactMetadata": {"trigger": "manual", "preTokens": 150000},
        },
        {
            **base,
            "type": "user",
            "uuid": "cs0",
            "isCompactSummary": True,
            "timestamp": stamp,
            "message": {"role": "user", "content": "This session is being continued"},
        },
    ]
    transcript.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    paths = _state(tmp_path)
    with writer_lock(paths):
        writer = open_writer(paths)
        try:
            writer.start()
            TranscriptImporter(writer).import_file(transcript)
        finally:
            writer.close()
    # The same compaction's hooks (PreCompact a minute before the boundary), and a prompt.
    boundary = int(datetime.fromisoformat(stamp).timestamp() * 1000) * 1_000_000
    hooks = [
        ("PreCompact", boundary - 60 * 10**9, {"trigger": "manual"}),
        ("PostCompact", boundary + 20 * 10**6, {"trigger": "manual", "compact_summary": "s"}),
        ("UserPromptSubmit", boundary + 10**9, {"prompt": "next"}),
    ]
    lines = [
        build_line(
            json.dumps(
                {"session_id": session, "cwd": "/p", "hook_event_name": event, **extra}
            ).encode(),
            ts,
            7000 + n,
        )
        for n, (event, ts, extra) in enumerate(hooks)
    ]
    (paths.spool / "20260402T12.jsonl").write_bytes(b"".join(lines))
    stats = catch_up(paths, Config()).stats
    assert (stats.lines, stats.entries, stats.duplicates) == (3, 1, 2)
