"""Tests for indexer.ingest.ingestor on real files and real SQLite: I3-I6, I10 (redaction, permissions).

Each test writes spool segments byte by byte (as the hook, a killed hook, or an operator would
leave them), runs catch-up passes (`indexer.writer.catch_up.catch_up`, or `Ingestor.run_once` when the
clock matters) and checks the index: entries, source positions, quarantine rows, counters.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import sqlite3
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers import run_cli
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from ctxd_hook.hook import append_line, build_line, segment_name
from indexer.config import Config, IngestConfig
from indexer.index import store
from indexer.ingest.ingestor import Ingestor, IngestStats
from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up, open_writer, writer_lock

SEALED = "20200101T00.jsonl"  # an hour long past: no hook appends to it any more
SESSION = "0f6a6c8e-1b2d-4c3e-9f40-5a6b7c8d9e01"
AWS_KEY = "AKIAZ7QWERTY4UIOP2XC"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
_ts = itertools.count(1_577_836_800_000_000_000, 1_000_003)  # unique, increasing ts_ns


# --- helpers -----------------------------------------------------------------------------


def make_state(tmp_path: Path, **ingest: Any) -> tuple[StatePaths, Config]:
    paths = StatePaths(tmp_path / ".ctxd")
    paths.ensure()
    return paths, Config(ingest=IngestConfig(**ingest))


def event(
    n: int, *, session: str = SESSION, hook: str = "PreToolUse", **extra: Any
) -> dict[str, Any]:
    """A Bash tool event shaped like the corpus' payloads."""
    p: dict[str, Any] = {
        "session_id": session,
        "transcript_path": f"/home/dev/.claude/projects/-home-dev-app/{session}.jsonl",
        "cwd": "/home/dev/app",
        "permission_mode": "default",
        "hook_event_name": hook,
        "tool_name": "Bash",
        "tool_use_id": f"toolu_{n:06d}",
        "tool_input": {"command": f"pytest -k case_{n}", "description": f"Run case {n}"},
    }
    if hook == "PostToolUse":
        p["tool_response"] = {"stdout": f"{n} passed", "stderr": "", "interrupted": False}
    p.update(extra)
    return p


def line(p: Any, ts_ns: int | None = None, pid: int = 4242) -> bytes:
    """A complete spool line as the hook builds it (with its b"\\n")."""
    data = p if isinstance(p, bytes) else json.dumps(p, separators=(",", ":")).encode()
    return build_line(data, next(_ts) if ts_ns is None else ts_ns, pid)


def write(paths: StatePaths, name: str, data: bytes) -> int:
    """Append raw bytes (no lock, no separator rule); return the offset they start at."""
    path = paths.spool / name
    with path.open("ab") as f:
        offset = f.tell()
        f.write(data)
    return offset


def hook_append(paths: StatePaths, name: str, p: Any) -> None:
    """Append like the hook: flock, and a b"\\n" first when the segment ends torn (I2)."""
    append_line(str(paths.spool), name, line(p))


def ingest(paths: StatePaths, config: Config) -> IngestStats:
    """One `ctxd ingest` (its own connection and writer lock, like a fresh process)."""
    result = catch_up(paths, config)
    assert not result.by_daemon
    return result.stats


def db(paths: StatePaths) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{paths.index_db}?mode=ro", uri=True)


def rows(paths: StatePaths, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = db(paths)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def entry_count(paths: StatePaths) -> int:
    return int(rows(paths, "SELECT count(*) FROM entries")[0][0])


def tool_ids(paths: StatePaths) -> list[str]:
    return [r[0] for r in rows(paths, "SELECT tool_use_id FROM entries ORDER BY id")]


def positions(paths: StatePaths) -> list[tuple[str, int]]:
    """The (segment, offset) source position of every entry."""
    return rows(
        paths,
        "SELECT f.name, e.offset FROM entries e JOIN files f USING(file_id) ORDER BY e.id",
    )


def quarantined(paths: StatePaths) -> list[tuple[str, int, int, str, bytes]]:
    return rows(paths, "SELECT name, offset, line_no, error, raw FROM quarantine ORDER BY id")


def meta(paths: StatePaths, key: str) -> str:
    got = rows(paths, "SELECT value FROM meta WHERE key=?", (key,))
    return str(got[0][0]) if got else ""


def offset_of(paths: StatePaths, name: str) -> int:
    got = rows(paths, "SELECT offset FROM files WHERE name=? AND active=1", (name,))
    return int(got[0][0]) if got else -1


def line_starts(data: bytes) -> list[int]:
    """Start offsets of the complete, non-empty lines of a segment."""
    starts, pos = [], 0
    while (end := data.find(b"\n", pos)) >= 0:
        if data[pos:end].strip():
            starts.append(pos)
        pos = end + 1
    return starts


# --- restart, partial lines (I3, I4) -------------------------------------------------------


def test_restart_resumes_from_the_offset_without_duplicates(tmp_path: Path) -> None:
    paths, config = make_state(tmp_path)
    for n in range(5):
        write(paths, SEALED, line(event(n)))
    first = ingest(paths, config)
    assert (first.entries, first.lines) == (5, 5)
    size = (paths.spool / SEALED).stat().st_size
    assert offset_of(paths, SEALED) == size

    for n in range(5, 8):
        write(paths, SEALED, line(event(n)))
    second = ingest(paths, config)
    assert (second.entries, second.lines, second.duplicates) == (3, 3, 0)
    assert second.bytes == (paths.spool / SEALED).stat().st_size - size  # only the new bytes

    third = ingest(paths, config)
    assert (third.entries, third.lines) == (0, 0)
    assert tool_ids(paths) == [f"toolu_{n:06d}" for n in range(8)]
    assert sorted(o for _, o in positions(paths)) == line_starts(
        (paths.spool / SEALED).read_bytes()
    )


def test_partial_last_line_across_restart_is_completed_exactly_once(tmp_path: Path) -> None:
    paths, config = make_state(tmp_path)
    first = line(event(0))
    write(paths, SEALED, first)
    torn = line(event(1))
    cut = torn.index(b'"tool_input"')
    write(paths, SEALED, torn[:cut])  # `{"ctxd":1,…` without its end and b"\n"

    assert ingest(paths, config).entries == 1
    assert offset_of(paths, SEALED) == len(first)  # never past the last b"\n" (I4)
    assert ingest(paths, config).entries == 0  # the fragment is "not yet written"
    assert offset_of(paths, SEALED) == len(first)

    write(paths, SEALED, torn[cut:])
    assert ingest(paths, config).entries == 1
    assert ingest(paths, config).entries == 0
    assert tool_ids(paths) == ["toolu_000000", "toolu_000001"]
    assert quarantined(paths) == []
    assert offset_of(paths, SEALED) == (paths.spool / SEALED).stat().st_size


def test_partial_tail_in_a_sealed_segment_is_quarantined_after_the_grace_period(
    tmp_path: Path,
) -> None:
    paths, config = make_state(tmp_path, partial_grace_s=30.0)
    write(paths, SEALED, line(event(0)))
    fragment = line(event(1))[:80]
    start = write(paths, SEALED, fragment)
    conn = store.connect(paths.index_db)
    try:
        ingestor = Ingestor(paths, config, conn)
        t0 = 1_900_000_000.0
        assert ingestor.run_once(now=t0).entries == 1
        assert ingestor.run_once(now=t0 + 29.0).quarantined == 0  # within the grace period
        assert offset_of(paths, SEALED) == start
        late = ingestor.run_once(now=t0 + 31.0)
    finally:
        conn.close()
    assert late.quarantined == 1
    [(name, offset, line_no, error, raw)] = quarantined(paths)
    assert (name, offset, line_no) == (SEALED, start, 2)
    assert "partial last line" in error and "sealed" in error
    assert raw == fragment
    assert offset_of(paths, SEALED) == (paths.spool / SEALED).stat().st_size

    # Appends after the quarantined fragment (a hook adds b"\n" first) are indexed.
    hook_append(paths, SEALED, event(2))
    assert ingest(paths, config).entries == 1
    assert tool_ids(paths) == ["toolu_000000", "toolu_000002"]


def test_partial_tail_quarantine_with_a_small_grace_from_the_config(tmp_path: Path) -> None:
    paths, config = make_state(tmp_path, partial_grace_s=0.0)
    write(paths, SEALED, line(event(0))[:-20])
    assert ingest(paths, config).quarantined == 0  # first sight: remembered, not judged
    assert ingest(paths, config).quarantined == 1
    assert offset_of(paths, SEALED) == (paths.spool / SEALED).stat().st_size


def test_partial_tail_in_the_current_hour_segment_waits(tmp_path: Path) -> None:
    paths, config = make_state(tmp_path, partial_grace_s=1.0)
    now = 1_899_997_200.0  # the start of an hour
    name = segment_name(int(now * 1e9))
    write(paths, name, line(event(0))[:-20])
    conn = store.connect(paths.index_db)
    try:
        ingestor = Ingestor(paths, config, conn)
        for later in (0.0, 10.0, 1000.0):  # the hook writing it may still be running
            assert ingestor.run_once(now=now + later).quarantined == 0
        assert offset_of(paths, name) == 0
        # once the hour is over the segment is sealed and the fragment goes to quarantine
        assert ingestor.run_once(now=now + 3600.0).quarantined == 1
    finally:
        conn.close()


def test_partial_tail_that_keeps_growing_is_not_quarantined(tmp_path: Path) -> None:
    paths, config = make_state(tmp_path, partial_grace_s=5.0)
    full = line(event(0))
    conn = store.connect(paths.index_db)
    try:
        ingestor = Ingestor(paths, config, conn)
        t = 1_900_000_000.0
        for cut in range(40, len(full) - 1, 40):  # a slow writer: grows every 4 s < grace
            write(paths, SEALED, full[(cut - 40) : cut])
            assert ingestor.run_once(now=t).quarantined == 0
            t += 4.0
        write(paths, SEALED, full[cut:])
        assert ingestor.run_once(now=t).entries == 1
    finally:
        conn.close()
    assert quarantined(paths) == []


# --- truncation, replacement, deletion, rotation (I5) ------------------------------------


def test_truncation_while_stopped_rereads_from_zero_and_dedupes(tmp_path: Path) -> None:
    paths, config = make_state(tmp_path)
    lines = [line(event(n)) for n in range(3)]
    for data in lines:
        write(paths, SEALED, data)
    assert ingest(paths, config).entries == 3

    os.truncate(paths.spool / SEALED, len(lines[0]))  # keeps the first record
    write(paths, SEALED, line(event(3)))
    stats = ingest(paths, config)
    assert stats.anomalies == 1
    assert (stats.entries, stats.duplicates) == (1, 1)  # the overlap is absorbed
    assert meta(paths, "anomaly.truncated") == "1"
    assert tool_ids(paths) == [f"toolu_{n:06d}" for n in range(4)]
    reasons = rows(
        paths, "SELECT reason, active FROM files WHERE name=? ORDER BY file_id", (SEALED,)
    )
    assert reasons == [("new", 0), ("truncated", 1)]
    assert offset_of(paths, SEALED) == (paths.spool / SEALED).stat().st_size


def test_truncation_while_running_rereads_from_zero_and_dedupes(tmp_path: Path) -> None:
    paths, config = make_state(tmp_path)
    with writer_lock(paths):
        writer = open_writer(paths, config)
        try:
            writer.start()
            for n in range(4):
                write(paths, SEALED, line(event(n)))
            assert writer.pass_once().entries == 4
            os.truncate(paths.spool / SEALED, 0)
            assert writer.pass_once().lines == 0  # empty now; noticed as a truncation
            write(paths, SEALED, line(event(1), ts_ns=_ts_of(paths, "toolu_000001")))
            write(paths, SEALED, line(event(4)))
            stats = writer.pass_once()
        finally:
            writer.conn.close()
    assert (stats.entries, stats.duplicates) == (1, 1)
    assert meta(paths, "anomaly.truncated") == "1"
    assert tool_ids(paths) == [f"toolu_{n:06d}" for n in range(5)]


def _ts_of(paths: StatePaths, tool_use_id: str) -> int:
    return int(rows(paths, "SELECT ts_ns FROM entries WHERE tool_use_id=?", (tool_use_id,))[0][0])


def test_copytruncate_regrowth_to_the_same_size_is_caught_by_the_marker(tmp_path: Path) -> None:
    paths, config = make_state(tmp_path)
    first = line(event(0))
    second = line(event(1), pid=1111)
    write(paths, SEALED, first + second)
    assert ingest(paths, config).entries == 2
    # Truncated and rewritten before the next pass: same inode, same head, same size, but the
    # bytes before the offset differ (another record of the same length).
    replacement = line(event(2), pid=2222)
    assert len(replacement) == len(second)
    path = paths.spool / SEALED
    ino = path.stat().st_ino
    with path.open("r+b") as f:
        f.truncate(0)
        f.write(first + replacement)
    assert path.stat().st_ino == ino
    stats = ingest(paths, config)
    assert stats.anomalies == 1
    assert meta(paths, "anomaly.replaced") == "1"
    assert (stats.entries, stats.duplicates) == (1, 1)
    assert tool_ids(paths) == ["toolu_000000", "toolu_000001", "toolu_000002"]


def test_delete_and_recreate_same_name_indexes_the_new_content(tmp_path: Path) -> None:
    paths, config = make_state(tmp_path)
    path = paths.spool / SEALED
    for n in range(3):
        write(paths, SEALED, line(event(n)))
    assert ingest(paths, config).entries == 3
    old_ino = path.stat().st_ino
    path.unlink()
    # Different content, at least as long: ext4 usually hands back the same inode at once.
    for n in range(3, 7):
        write(paths, SEALED, line(event(n)))
    reused = path.stat().st_ino == old_ino
    stats = ingest(paths, config)
    assert stats.anomalies == 1, f"inode reused: {reused}"
    assert meta(paths, "anomaly.replaced") == "1"
    assert stats.entries == 4
    assert tool_ids(paths) == [f"toolu_{n:06d}" for n in range(7)]  # the old ones are kept
    assert offset_of(paths, SEALED) == path.stat().st_size


def test_delete_seen_then_recreate_is_a_new_file(tmp_path: Path) -> None:
    paths, config = make_state(tmp_path)
    path = paths.spool / SEALED
    write(paths, SEALED, line(event(0)))
    assert ingest(paths, config).entries == 1
    path.unlink()
    assert ingest(paths, config).lines == 0  # gone: its generation is retired
    assert rows(paths, "SELECT count(*) FROM files WHERE active=1") == [(0,)]
    write(paths, SEALED, line(event(1)))
    stats = ingest(paths, config)
    assert (stats.entries, stats.anomalies) == (1, 0)
    assert tool_ids(paths) == ["toolu_000000", "toolu_000001"]


def test_rename_aside_retires_the_segment_after_its_lines_were_read(tmp_path: Path) -> None:
    paths, config = make_state(tmp_path)
    for n in range(3):
        write(paths, SEALED, line(event(n)))
    assert ingest(paths, config).entries == 3
    (paths.spool / SEALED).rename(paths.spool / (SEALED + ".1"))
    stats = ingest(paths, config)
    assert (stats.lines, stats.anomalies) == (0, 0)
    assert rows(paths, "SELECT name, active FROM files") == [(SEALED, 0)]
    assert entry_count(paths) == 3


def test_rename_to_another_segment_name_reads_its_unread_lines(tmp_path: Path) -> None:
    # Rotation with a stale writer: lines land in the old file after the last pass, then the
    # file is renamed to another `.jsonl` name. Nothing is lost, nothing is indexed twice.
    paths, config = make_state(tmp_path)
    for n in range(3):
        write(paths, SEALED, line(event(n)))
    assert ingest(paths, config).entries == 3
    write(paths, SEALED, line(event(3)))
    rotated = "20200101T00-rotated.jsonl"
    (paths.spool / SEALED).rename(paths.spool / rotated)
    hook_append(paths, SEALED, event(4))  # a new segment under the old name
    stats = ingest(paths, config)
    assert (stats.entries, stats.duplicates) == (2, 3)
    assert tool_ids(paths) == [f"toolu_{n:06d}" for n in range(5)]


# --- torn fragments, oversize and bad lines (I6) -------------------------------------------


def test_bytes_glued_behind_a_torn_fragment_are_not_salvaged(tmp_path: Path) -> None:
    # The hook never writes this (it starts a fresh line after a torn fragment), so bytes in
    # the middle of a line are payload: reading them as a record would let a payload forge one.
    paths, config = make_state(tmp_path)
    write(paths, SEALED, line(event(0)))
    fragment = line(event(1))[:120]  # a hook killed mid-write: no b"\n"
    frag_at = write(paths, SEALED, fragment)
    good = line(event(2))
    write(paths, SEALED, good)  # written without the hook's b"\n" prefix
    write(paths, SEALED, line(event(3)))

    stats = ingest(paths, config)
    assert (stats.entries, stats.quarantined) == (2, 1)
    [(name, offset, line_no, error, raw)] = quarantined(paths)
    assert (name, offset, line_no) == (SEALED, frag_at, 2)
    assert error.startswith("not a spool envelope")
    assert raw == fragment + good[:-1]
    assert tool_ids(paths) == ["toolu_000000", "toolu_000003"]


def test_torn_fragment_as_its_own_line_is_quarantined(tmp_path: Path) -> None:
    paths, config = make_state(tmp_path)
    hook_append(paths, SEALED, event(0))
    fragment = line(event(1))[:150]
    frag_at = write(paths, SEALED, fragment)
    hook_append(paths, SEALED, event(2))  # the hook starts a fresh line after the fragment
    data = (paths.spool / SEALED).read_bytes()
    assert data[frag_at + len(fragment) : frag_at + len(fragment) + 1] == b"\n"

    stats = ingest(paths, config)
    assert (stats.entries, stats.quarantined) == (2, 1)
    [(name, offset, line_no, error, raw)] = quarantined(paths)
    assert (name, offset, line_no) == (SEALED, frag_at, 2)
    assert "not a spool envelope" in error
    assert raw == fragment
    assert tool_ids(paths) == ["toolu_000000", "toolu_000002"]


@pytest.mark.parametrize("batch_bytes", [4096, 8 << 20], ids=["small-batches", "default-batches"])
def test_line_over_max_line_bytes_is_quarantined_and_the_next_lines_indexed(
    tmp_path: Path, batch_bytes: int
) -> None:
    paths, config = make_state(tmp_path, max_line_bytes=4096, batch_bytes=batch_bytes)
    write(paths, SEALED, line(event(0)))
    big = line(event(1, tool_response={"stdout": "x" * 20_000}, hook="PostToolUse"))
    big_at = write(paths, SEALED, big)
    write(paths, SEALED, line(event(2)))
    write(paths, SEALED, line(event(3)))

    stats = ingest(paths, config)
    assert (stats.entries, stats.quarantined) == (3, 1)
    [(name, offset, line_no, error, raw)] = quarantined(paths)
    assert (name, offset, line_no) == (SEALED, big_at, 2)
    assert "max_line_bytes" in error
    assert raw.startswith(big[:1000])
    assert tool_ids(paths) == ["toolu_000000", "toolu_000002", "toolu_000003"]
    assert offset_of(paths, SEALED) == (paths.spool / SEALED).stat().st_size


def test_oversize_partial_line_still_being_written_waits(tmp_path: Path) -> None:
    paths, config = make_state(tmp_path, max_line_bytes=4096, batch_bytes=4096)
    write(paths, SEALED, line(event(0)))
    big = line(event(1, prompt="y" * 20_000))
    write(paths, SEALED, big[:10_000])
    assert ingest(paths, config).quarantined == 0  # no b"\n" yet: the end is not known
    write(paths, SEALED, big[10_000:])
    write(paths, SEALED, line(event(2)))
    stats = ingest(paths, config)
    assert (stats.entries, stats.quarantined) == (1, 1)
    assert tool_ids(paths) == ["toolu_000000", "toolu_000002"]


BAD_PAYLOADS = [
    pytest.param(b"[1,2,3]", "bad hook payload", id="array"),
    pytest.param(b'"just a string"', "bad hook payload", id="string"),
    pytest.param(b"42", "bad hook payload", id="number"),
    pytest.param(b"null", "bad hook payload", id="null"),
    pytest.param(
        json.dumps({"session_id": 5, "hook_event_name": "Stop"}).encode(),
        "session_id",
        id="sid-int",
    ),
    pytest.param(
        json.dumps({"session_id": None, "hook_event_name": "Stop"}).encode(),
        "session_id",
        id="sid-null",
    ),
    pytest.param(json.dumps({"session_id": SESSION}).encode(), "hook_event_name", id="no-event"),
    pytest.param(json.dumps({"hook_event_name": "Stop"}).encode(), "session_id", id="no-session"),
    pytest.param(
        json.dumps({"session_id": "../../etc", "hook_event_name": "Stop"}).encode(),
        "not a valid id",
        id="sid-traversal",
    ),
    pytest.param(
        json.dumps({"session_id": "a/b", "hook_event_name": "Stop"}).encode(),
        "not a valid id",
        id="sid-slash",
    ),
    pytest.param(
        json.dumps({"session_id": ".hidden", "hook_event_name": "Stop"}).encode(),
        "not a valid id",
        id="sid-dot",
    ),
    pytest.param(
        json.dumps({**event(9), "tool_name": ["Bash"]}).encode(), "tool_name", id="tool-name-list"
    ),
    pytest.param(
        json.dumps({**event(9), "is_interrupt": "yes"}).encode(), "is_interrupt", id="bool-str"
    ),
    pytest.param(
        b'{"session_id":"s\xff","hook_event_name":"Stop"}', "UTF-8", id="invalid-utf8-sid"
    ),
    pytest.param(
        b'{"session_id":"s-1","hook_event_name":"PreToolUse","tool_name":"Bash",'
        b'"tool_input":{"command":"ls \xc3"}}',
        "UTF-8",
        id="invalid-utf8-in-tool-input",
    ),
    pytest.param(b"\x00\x01binary\xfe", "not a spool envelope", id="binary"),
    pytest.param(b'{"session_id":"s-1","hook_event_name":"Stop"', "not a spool", id="torn-json"),
]


@pytest.mark.parametrize(("payload", "message"), BAD_PAYLOADS)
def test_bad_payload_is_quarantined_with_a_clear_error(
    tmp_path: Path, payload: bytes, message: str
) -> None:
    paths, config = make_state(tmp_path)
    write(paths, SEALED, line(event(0)))
    bad_at = write(paths, SEALED, build_line(payload, next(_ts), 77))
    write(paths, SEALED, line(event(1)))

    stats = ingest(paths, config)
    assert (stats.entries, stats.quarantined) == (2, 1)
    [(name, offset, line_no, error, raw)] = quarantined(paths)
    assert (name, offset, line_no) == (SEALED, bad_at, 2)
    assert message in error, error
    assert raw
    assert tool_ids(paths) == ["toolu_000000", "toolu_000001"]
    # nothing was created outside the sessions directory from a hostile id
    assert not (paths.root / "etc").exists() and not (tmp_path / "etc").exists()
    assert {p.name for p in paths.sessions.iterdir()} == {SESSION}


def test_unknown_hook_event_is_kept_as_a_generic_entry(tmp_path: Path) -> None:
    paths, config = make_state(tmp_path)
    write(
        paths,
        SEALED,
        line({"session_id": SESSION, "hook_event_name": "WorktreeCreate", "name": "feature-x"}),
    )
    assert ingest(paths, config).entries == 1
    assert rows(paths, "SELECT hook_event, event, agent_id FROM entries") == [
        ("WorktreeCreate", "other", "main")
    ]


def test_unknown_fields_are_ignored(tmp_path: Path) -> None:
    paths, config = make_state(tmp_path)
    future = event(
        0,
        effort={"level": "high"},
        new_top_level_list=[1, {"a": None}],
        tool_input={"command": "make", "sandbox": {"mode": "strict"}, "timeout": 600000},
    )
    write(paths, SEALED, line(future))
    assert ingest(paths, config).entries == 1
    assert rows(paths, "SELECT event, tool_name, description FROM entries") == [
        ("tool_use", "Bash", "Bash make")
    ]


def test_duplicate_deliveries_are_stored_once(tmp_path: Path) -> None:
    paths, config = make_state(tmp_path)
    # Same (session_id, tool_use_id, hook_event_name) from different hook processes.
    for pid in (100, 200, 300):
        write(paths, SEALED, line(event(7, hook="PostToolUse"), pid=pid))
    write(paths, SEALED, line(event(7, hook="PreToolUse")))  # another event of the same call
    write(paths, SEALED, line(event(7, hook="PostToolUse", session_id="other-session")))
    stats = ingest(paths, config)
    assert (stats.entries, stats.duplicates, stats.quarantined) == (3, 2, 0)
    # and again in a later pass
    write(paths, SEALED, line(event(7, hook="PostToolUse"), pid=400))
    assert ingest(paths, config).duplicates == 1
    assert sorted(rows(paths, "SELECT session_id, hook_event FROM entries")) == sorted(
        [(SESSION, "PostToolUse"), (SESSION, "PreToolUse"), ("other-session", "PostToolUse")]
    )


def test_blank_separator_lines_are_skipped_silently(tmp_path: Path) -> None:
    paths, config = make_state(tmp_path)
    write(paths, SEALED, b"\n" + line(event(0)) + b"\n  \n" + line(event(1)))
    stats = ingest(paths, config)
    assert (stats.entries, stats.quarantined) == (2, 0)


# --- I10: redaction and permissions --------------------------------------------------------


def _db_bytes(paths: StatePaths) -> bytes:
    return b"".join(p.read_bytes() for p in paths.root.glob("index.db*") if p.is_file())


def test_secrets_never_reach_the_index_or_the_views(tmp_path: Path) -> None:
    paths, _ = make_state(tmp_path)
    secret_cmd = f"aws configure set aws_access_key_id {AWS_KEY} && git push https://{GITHUB_TOKEN}@github.com/o/r"
    write(
        paths, SEALED, line(event(0, tool_input={"command": secret_cmd, "description": "deploy"}))
    )
    write(
        paths,
        SEALED,
        line(
            event(1, hook="PostToolUse", tool_response={"stdout": f"key={AWS_KEY}", "stderr": ""})
        ),
    )
    write(
        paths,
        SEALED,
        line(
            {
                "session_id": SESSION,
                "hook_event_name": "UserPromptSubmit",
                "prompt": f"use {AWS_KEY} and <private>my home address</private>",
            }
        ),
    )
    # quarantined lines are redacted too: a bad payload, an oversize line, a partial tail
    write(
        paths, SEALED, build_line(json.dumps({"session_id": "../x", "k": AWS_KEY}).encode(), 1, 1)
    )
    write(paths, SEALED, line(event(2, tool_input={"command": f"echo {AWS_KEY}" + " " * 5000})))
    write(paths, SEALED, line(event(3, tool_input={"command": f"echo {GITHUB_TOKEN}"}))[:-30])
    small = Config(ingest=IngestConfig(max_line_bytes=4096, batch_bytes=4096, partial_grace_s=0))
    ingest(paths, small)  # passes until drained: the partial tail is judged on its second sight
    assert entry_count(paths) == 3
    assert len(quarantined(paths)) == 3

    raw_db = _db_bytes(paths)
    assert AWS_KEY.encode() not in raw_db
    assert GITHUB_TOKEN.encode() not in raw_db
    assert b"my home address" not in raw_db
    assert b"[REDACTED" in raw_db
    for view in paths.sessions.rglob("*.jsonl"):
        text = view.read_bytes()
        assert AWS_KEY.encode() not in text and GITHUB_TOKEN.encode() not in text


def test_state_files_are_private(tmp_path: Path) -> None:
    paths, config = make_state(tmp_path)
    hook_append(paths, SEALED, event(0))
    task = event(
        1, tool_name="Task", tool_input={"prompt": "AgentId: qa-1\nTest it", "subagent_type": "qa"}
    )
    hook_append(paths, SEALED, task)
    old = os.umask(0o022)
    try:
        assert ingest(paths, config).entries == 2
    finally:
        os.umask(old)
    files = [paths.index_db, *paths.root.glob("index.db-*"), *paths.sessions.rglob("*.jsonl")]
    assert len([f for f in files if f.suffix == ".jsonl"]) >= 3
    for f in files:
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
    dirs = [
        paths.root,
        paths.spool,
        paths.sessions,
        *[d for d in paths.sessions.rglob("*") if d.is_dir()],
    ]
    for d in dirs:
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d


# --- recovery from a corrupt index ---------------------------------------------------------


def test_corrupt_index_is_reported_and_rebuilt_from_the_spool(tmp_path: Path) -> None:
    paths, config = make_state(tmp_path)
    for n in range(4):
        hook_append(paths, SEALED, event(n))
    assert ingest(paths, config).entries == 4
    for extra in paths.root.glob("index.db-*"):
        extra.unlink()
    paths.index_db.write_bytes(b"this is not a database" * 100)

    broken = run_cli("ingest", "--state-dir", str(paths.root))
    assert broken.returncode == 1
    assert broken.stderr.count("\n") == 1, broken.stderr
    assert "ctxd rebuild" in broken.stderr and "index.db" in broken.stderr

    paths.index_db.rename(paths.root / "index.db.corrupt")  # as the message says
    rebuilt = run_cli("rebuild", "--state-dir", str(paths.root))
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert tool_ids(paths) == [f"toolu_{n:06d}" for n in range(4)]
    assert sorted(o for _, o in positions(paths)) == line_starts(
        (paths.spool / SEALED).read_bytes()
    )


# --- a model-based test (reliability-and-deps §1.6 item 10) ---------------------------------


class SpoolMachine(RuleBasedStateMachine):
    """Writers, operators and restarts in any order; after every read the index must hold
    each complete record present in the spool exactly once, and nothing else.

    Rules: WriteLine (the hook), WritePartial / CompletePartial (a slow or killed hook),
    Truncate (at a line boundary), DeleteRecreate, RotateRename (to another segment name),
    Restart (a new process: new connection, new Ingestor) and Read.
    """

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="ctxd-model-"))
        self.paths, self.config = make_state(self.tmp)
        self.conn = store.connect(self.paths.index_db)
        self.ingestor = Ingestor(self.paths, self.config, self.conn)
        self.serial = itertools.count()
        self.complete: set[str] = set()  # ids of records written whole
        self.pending: dict[str, tuple[str, bytes, int]] = {}  # segment -> (id, record, cut)
        self.fragments: list[bytes] = []  # torn prefixes that became lines of their own
        self.renames = itertools.count()

    def teardown(self) -> None:
        self.conn.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _record(self) -> tuple[str, bytes]:
        n = next(self.serial)
        rid = f"toolu_m{n:05d}"
        # the unique id comes last, so no two records share their last bytes (the marker)
        p = {
            "session_id": SESSION,
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "make test"},
            "tool_use_id": rid,
        }
        return rid, line(p, pid=1000 + n % 7)

    def _segments(self) -> list[str]:
        return sorted(p.name for p in self.paths.spool.glob("*.jsonl"))

    @rule(seg=st.sampled_from(["20200101T00.jsonl", "20200101T01.jsonl"]))
    def write_line(self, seg: str) -> None:
        if seg in self.pending:  # the hook adds b"\n": the fragment is torn for good
            _, record, cut = self.pending.pop(seg)
            self.fragments.append(record[:cut])
        rid, record = self._record()
        append_line(str(self.paths.spool), seg, record)
        self.complete.add(rid)

    @rule(
        seg=st.sampled_from(["20200101T00.jsonl", "20200101T01.jsonl"]), frac=st.floats(0.01, 0.99)
    )
    def write_partial(self, seg: str, frac: float) -> None:
        if seg in self.pending:
            return
        rid, record = self._record()
        cut = max(1, min(len(record) - 2, int(len(record) * frac)))
        write(self.paths, seg, record[:cut])
        self.pending[seg] = (rid, record, cut)

    @rule(data=st.data())
    def complete_partial(self, data: st.DataObject) -> None:
        if not self.pending:
            return
        seg = data.draw(st.sampled_from(sorted(self.pending)))
        rid, record, cut = self.pending.pop(seg)
        write(self.paths, seg, record[cut:])
        self.complete.add(rid)

    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        candidates = [s for s in self._segments() if s not in self.pending]
        if not candidates:
            return
        seg = data.draw(st.sampled_from(candidates))
        content = (self.paths.spool / seg).read_bytes()
        bounds = [0] + [i + 1 for i, b in enumerate(content) if b == 0x0A]
        os.truncate(self.paths.spool / seg, data.draw(st.sampled_from(bounds)))

    @rule(data=st.data())
    def delete_recreate(self, data: st.DataObject) -> None:
        segments = self._segments()
        if not segments:
            return
        seg = data.draw(st.sampled_from(segments))
        (self.paths.spool / seg).unlink()
        self.pending.pop(seg, None)
        rid, record = self._record()
        append_line(str(self.paths.spool), seg, record)
        self.complete.add(rid)

    @rule(data=st.data())
    def rotate_rename(self, data: st.DataObject) -> None:
        segments = self._segments()
        if not segments:
            return
        seg = data.draw(st.sampled_from(segments))
        new = f"20200101T02-r{next(self.renames)}.jsonl"
        (self.paths.spool / seg).rename(self.paths.spool / new)
        if seg in self.pending:
            self.pending[new] = self.pending.pop(seg)

    @rule()
    def restart(self) -> None:
        self.conn.close()
        self.conn = store.connect(self.paths.index_db)
        self.ingestor = Ingestor(self.paths, self.config, self.conn)

    @rule()
    def read(self) -> None:
        self.ingestor.run_once()
        ids = [r[0] for r in self.conn.execute("SELECT tool_use_id FROM entries")]
        assert len(ids) == len(set(ids)), "a record was indexed twice"
        assert set(ids) <= self.complete, "a fragment or an unknown record was indexed"
        present = set()
        for seg in self._segments():
            for raw in (self.paths.spool / seg).read_bytes().split(b"\n")[:-1]:
                try:
                    present.add(json.loads(raw)["event"]["tool_use_id"])
                except ValueError:
                    pass  # a torn fragment
        assert present <= set(ids), f"complete records not indexed: {present - set(ids)}"
        for (raw,) in self.conn.execute("SELECT raw FROM quarantine"):
            assert any(f.startswith(raw) or raw.startswith(f) for f in self.fragments), raw[:80]


TestSpoolMachine = SpoolMachine.TestCase
TestSpoolMachine.settings = settings(
    max_examples=40, stateful_step_count=30, deadline=None, suppress_health_check=list(HealthCheck)
)
