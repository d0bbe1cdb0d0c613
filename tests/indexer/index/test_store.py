"""indexer/index/store.py: schema and versions, file generations, deduplicated inserts, round trips."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from indexer.errors import IndexCorruptError, StateDirError
from indexer.index.keys import tool_key
from indexer.index.store import (
    SCHEMA_VERSION,
    active_files,
    agent_entries,
    bump_counter,
    connect,
    count,
    entries_after,
    entries_by_id,
    get_meta,
    insert_entries,
    insert_quarantine,
    max_entry_id,
    new_file,
    retire_file,
    save_file,
    set_meta,
)
from indexer.index.transactions import transaction
from indexer.models import Entry


def _entry(ts: int, pid: int = 1, **kw: object) -> Entry:
    fields: dict[str, object] = {
        "file_id": 1,
        "offset": ts * 10,
        "line_no": ts,
        "ts_ns": ts,
        "pid": pid,
        "session_id": "s1",
        "hook_event": "Stop",
        "event": "stop",
    }
    fields.update(kw)
    return Entry(**fields)  # type: ignore[arg-type]


@pytest.fixture
def db(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    conn = connect(tmp_path / "index.db")
    yield conn
    conn.close()


def test_a_new_index_is_private_wal_and_versioned(tmp_path: Path) -> None:
    conn = connect(tmp_path / "index.db")
    try:
        assert stat.S_IMODE((tmp_path / "index.db").stat().st_mode) == 0o600
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
        assert SCHEMA_VERSION == 1
        for table in ("entries", "sessions", "agents", "quarantine", "files"):
            assert count(conn, table) == 0
    finally:
        conn.close()


def test_reopening_keeps_the_data(tmp_path: Path) -> None:
    conn = connect(tmp_path / "index.db")
    with transaction(conn):
        insert_entries(conn, [_entry(1)])
    conn.close()
    conn = connect(tmp_path / "index.db")
    try:
        assert count(conn, "entries") == 1
    finally:
        conn.close()


def test_a_symlinked_index_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real.db").write_bytes(b"")
    (tmp_path / "index.db").symlink_to(tmp_path / "real.db")
    for readonly in (False, True):
        with pytest.raises(StateDirError, match=r"index\.db is a symlink"):
            connect(tmp_path / "index.db", readonly=readonly)


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "index.db")
    conn.execute("PRAGMA user_version=2")
    conn.close()
    with pytest.raises(IndexCorruptError, match="schema version 2 is newer"):
        connect(tmp_path / "index.db")


def test_a_garbage_file_is_index_corrupt_with_a_fix(tmp_path: Path) -> None:
    (tmp_path / "index.db").write_bytes(b"this is not a database at all" * 200)
    with pytest.raises(IndexCorruptError, match="ctxd rebuild"):
        connect(tmp_path / "index.db")


def test_readonly_open_of_an_unversioned_index_is_refused(tmp_path: Path) -> None:
    sqlite3.connect(tmp_path / "index.db").close()  # an empty database, version 0, no writer
    with pytest.raises(IndexCorruptError, match="schema version 0, expected 1"):
        connect(tmp_path / "index.db", readonly=True)


def test_readonly_connection_cannot_write(tmp_path: Path) -> None:
    connect(tmp_path / "index.db").close()
    ro = connect(tmp_path / "index.db", readonly=True)
    try:
        with pytest.raises(sqlite3.OperationalError):
            ro.execute("INSERT INTO meta(key, value) VALUES ('a', 'b')")
    finally:
        ro.close()


def test_transaction_rolls_back_on_error(db: sqlite3.Connection) -> None:
    with pytest.raises(RuntimeError), transaction(db):
        insert_entries(db, [_entry(1)])
        raise RuntimeError("boom")
    assert count(db, "entries") == 0
    assert not db.in_transaction


def test_meta_and_counters(db: sqlite3.Connection) -> None:
    assert get_meta(db, "k") == ""
    assert get_meta(db, "k", "dflt") == "dflt"
    set_meta(db, "k", "v1")
    set_meta(db, "k", "v2")
    assert get_meta(db, "k") == "v2"
    bump_counter(db, "n")
    bump_counter(db, "n", 5)
    assert get_meta(db, "n") == "6"


def test_file_generations(db: sqlite3.Connection) -> None:
    first = new_file(db, "2026-11-25T13.jsonl", 7, 100, "new", 1)
    assert (first.offset, first.line_no, first.head_hash) == (0, 0, b"")
    moved = dataclasses.replace(first, offset=512, line_no=3, marker=b"abc", head_len=64,
                                head_hash=b"h", partial_since=5.5, partial_size=9)  # fmt: skip
    save_file(db, moved)
    assert active_files(db) == {"2026-11-25T13.jsonl": moved}
    second = new_file(db, "2026-11-25T13.jsonl", 7, 200, "replaced", 2)
    assert second.file_id != first.file_id
    assert active_files(db) == {"2026-11-25T13.jsonl": second}
    assert count(db, "files") == 2
    retire_file(db, second.file_id)
    assert active_files(db) == {}


def test_insert_returns_stored_entries_with_increasing_ids(db: sqlite3.Connection) -> None:
    stored = insert_entries(db, [_entry(1), _entry(2), _entry(3)])
    assert [s.entry.ts_ns for s in stored] == [1, 2, 3]
    assert [s.id for s in stored] == [1, 2, 3]
    assert max_entry_id(db) == 3
    assert insert_entries(db, []) == []


@pytest.mark.parametrize("replayed", [False, True], ids=["all new", "one duplicate"])
def test_returned_ids_are_the_stored_ids(db: sqlite3.Connection, replayed: bool) -> None:
    # Ids are taken from the previous maximum (no read-back when every row is new): they must
    # be the rows' ids, also after the newest entry was deleted (its id is given again).
    insert_entries(db, [_entry(1), _entry(2), _entry(3)])
    db.execute("DELETE FROM entries WHERE id=3")
    batch = [_entry(2)] if replayed else []
    stored = insert_entries(db, [*batch, _entry(4), _entry(5)])
    rows = db.execute("SELECT id, ts_ns FROM entries WHERE ts_ns>3 ORDER BY id").fetchall()
    assert [(s.id, s.entry.ts_ns) for s in stored] == [tuple(r) for r in rows] == [(3, 4), (4, 5)]


def test_entries_by_id_reads_more_ids_than_one_statement_binds(db: sqlite3.Connection) -> None:
    insert_entries(db, [_entry(ts) for ts in range(1, 1201)])
    wanted = list(range(2, 1201, 2))
    assert [se.id for se in entries_by_id(db, wanted)] == wanted


def test_the_same_hook_invocation_is_stored_once(db: sqlite3.Connection) -> None:
    insert_entries(db, [_entry(1, pid=9)])
    again = insert_entries(db, [_entry(1, pid=9, description="replayed"), _entry(2, pid=9)])
    assert [s.entry.ts_ns for s in again] == [2]
    assert count(db, "entries") == 2
    assert entries_after(db, 0)[0].entry.description == ""


def test_a_duplicate_inside_one_batch_keeps_the_first(db: sqlite3.Connection) -> None:
    stored = insert_entries(db, [_entry(1, description="first"), _entry(1, description="second")])
    assert [s.entry.description for s in stored] == ["first"]
    assert entries_after(db, 0)[0].entry.description == "first"


def test_a_tool_event_delivered_twice_is_stored_once(db: sqlite3.Connection) -> None:
    a = _entry(1, pid=1, hook_event="PostToolUse", tool_use_id="tu1")
    b = _entry(2, pid=2, hook_event="PostToolUse", tool_use_id="tu1")  # another invocation
    c = _entry(3, pid=3, hook_event="PreToolUse", tool_use_id="tu1")  # another hook event
    d = _entry(4, pid=4, hook_event="PostToolUse", tool_use_id="tu1", session_id="s2")
    stored = insert_entries(db, [a, b, c, d])
    assert [s.entry.ts_ns for s in stored] == [1, 3, 4]


def test_tool_key() -> None:
    assert tool_key(_entry(1)) is None
    k = tool_key(_entry(1, tool_use_id="tu1", hook_event="PostToolUse"))
    assert isinstance(k, int)
    assert -(2**63) <= k < 2**63
    assert k == tool_key(_entry(99, pid=5, tool_use_id="tu1", hook_event="PostToolUse"))
    assert k != tool_key(_entry(1, tool_use_id="tu2", hook_event="PostToolUse"))
    assert k != tool_key(_entry(1, tool_use_id="tu1", hook_event="PreToolUse"))
    assert k != tool_key(_entry(1, tool_use_id="tu1", hook_event="PostToolUse", session_id="s2"))


def test_every_field_round_trips(db: sqlite3.Connection) -> None:
    full = Entry(
        file_id=4, offset=1234, line_no=56, ts_ns=1_700_000_000_000_000_001, pid=4321,
        session_id="sess-ü", hook_event="PostToolUse", event="tool_result", agent_id="ag-1",
        agent_type="Explore", cc_agent_id="cc9", tool_name="Edit", tool_use_id="tu7",
        description="Edit a.py", instruction="do it", output_summary="ok", error="e",
        files=("/p/a.py", "/p/b c.py"), text="tëxt\nline", cwd="/p",
        detail=msgspec.Raw(b'{"input":{"x":1}}'),
    )  # fmt: skip
    insert_entries(db, [full, _entry(2)])
    got = entries_after(db, 0)
    assert got[0].id == 1
    assert got[0].entry == full
    assert got[1].entry.files == ()
    assert bytes(got[1].entry.detail) == b""


def test_entries_after_pages_by_id(db: sqlite3.Connection) -> None:
    insert_entries(db, [_entry(t) for t in range(1, 8)])
    assert [s.id for s in entries_after(db, 3, limit=2)] == [4, 5]
    assert [s.id for s in entries_after(db, 7)] == []


def test_agent_entries_select_one_agent_of_one_session(db: sqlite3.Connection) -> None:
    insert_entries(
        db,
        [
            _entry(1, agent_id="a1"),
            _entry(2, agent_id="a2"),
            _entry(3, agent_id="a1", session_id="s2"),
            _entry(4, agent_id="a1"),
        ],
    )
    assert [s.entry.ts_ns for s in agent_entries(db, "s1", "a1")] == [1, 4]
    assert [s.entry.ts_ns for s in agent_entries(db, "s1", "a1", after_id=1)] == [4]


def test_quarantine_is_once_per_position_and_clips_the_error(db: sqlite3.Connection) -> None:
    insert_quarantine(db, 1, "seg.jsonl", 10, 2, "x" * 900, b"raw", 5)
    insert_quarantine(db, 1, "seg.jsonl", 10, 2, "again", b"raw", 6)
    insert_quarantine(db, 1, "seg.jsonl", 20, 3, "other", b"raw2", 7)
    assert count(db, "quarantine") == 2
    error = db.execute("SELECT error FROM quarantine WHERE offset=10").fetchone()[0]
    assert error == "x" * 500


def test_count_refuses_a_foreign_table(db: sqlite3.Connection) -> None:
    with pytest.raises(AssertionError):
        count(db, "sqlite_master")


def test_an_empty_existing_index_file_is_adopted(tmp_path: Path) -> None:
    # A pre-existing empty index.db (made by `touch`, say) gets the schema, it is not refused.
    (tmp_path / "index.db").write_bytes(b"")
    os.chmod(tmp_path / "index.db", 0o600)
    conn = connect(tmp_path / "index.db")
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    finally:
        conn.close()
