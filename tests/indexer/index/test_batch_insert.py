"""A batch's entries go in with one statement and no savepoint; an entry that cannot be stored
is isolated without undoing the rest (indexer.index.store.insert_entries, Ingestor.store_batch)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from test_views import SEALED, base, make_state, spool

from indexer.config import Config
from indexer.index import store
from indexer.index.transactions import transaction
from indexer.ingest.ingestor import Ingestor
from indexer.ingest.lines import Batch
from indexer.models import Entry, HookPayload
from indexer.writer.catch_up import open_writer

TOO_BIG = 2**64  # no SQLite integer holds it: binding it fails inside the batch's statement


def _entry(ts: int, **kw: object) -> Entry:
    fields: dict[str, object] = {
        "file_id": 1,
        "offset": ts * 100,
        "line_no": ts,
        "ts_ns": ts,
        "pid": 7,
        "session_id": "s1",
        "hook_event": "PostToolUse",
        "event": "tool_result",
        "tool_use_id": f"tu{ts}",
        "text": f"entry {ts}",
    }
    fields.update(kw)
    return Entry(**fields)  # type: ignore[arg-type]


@pytest.fixture
def db(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    conn = store.connect(tmp_path / "index.db")
    yield conn
    conn.close()


def stored_texts(conn: sqlite3.Connection) -> list[str]:
    return [str(r[0]) for r in conn.execute("SELECT text FROM entries ORDER BY id")]


@pytest.mark.parametrize(
    "bad",
    [
        _entry(3, pid=TOO_BIG),  # fails while the statement runs, after rows 1 and 2
        _entry(3, files=(object(),)),  # fails while its row is built, before any insert
    ],
    ids=["bind", "row"],
)
def test_an_unstorable_entry_is_handed_back_and_the_others_are_stored(
    db: sqlite3.Connection, bad: Entry
) -> None:
    refused: list[tuple[Entry, str]] = []
    entries = [_entry(1), _entry(2), bad, _entry(4), _entry(2, text="a duplicate"), _entry(5)]
    with transaction(db):
        store.insert_entries(db, [_entry(5, text="stored before")])
        stored = store.insert_entries(
            db, entries, on_unstorable=lambda e, err: refused.append((e, type(err).__name__))
        )
    assert [se.entry.text for se in stored] == ["entry 1", "entry 2", "entry 4"]
    assert [se.id for se in stored] == [2, 3, 4]
    assert [e for e, _ in refused] == [bad]
    assert stored_texts(db) == ["stored before", "entry 1", "entry 2", "entry 4"]


def test_without_a_handler_an_unstorable_entry_fails_the_insert(db: sqlite3.Connection) -> None:
    with pytest.raises(OverflowError), transaction(db):
        store.insert_entries(db, [_entry(1), _entry(2, pid=TOO_BIG)])
    assert stored_texts(db) == []  # the caller's transaction undid the first row


def test_the_ingest_quarantines_only_the_unstorable_entry(tmp_path: Path) -> None:
    paths = make_state(tmp_path)
    conn = store.connect(paths.index_db)
    try:
        ingestor = Ingestor(paths, Config(), conn)
        with transaction(conn):
            state = store.new_file(conn, SEALED, 1, 1, "new", 0)
            batch = Batch(state)
            payload = msgspec.json.decode(
                json.dumps(base("PostToolUse")).encode(), type=HookPayload
            )
            for made in (_entry(1), _entry(2, pid=TOO_BIG), _entry(3)):
                e = msgspec.structs.replace(made, file_id=state.file_id)
                batch.pending.append((e, payload))
                batch.sources[e.offset] = (b'{"raw":%d}' % e.ts_ns).__bytes__
            ingestor.store_batch(batch)
        assert stored_texts(conn) == ["entry 1", "entry 3"]
        assert (batch.stats.entries, batch.stats.quarantined) == (2, 1)
        rows = conn.execute("SELECT offset, error, raw FROM quarantine").fetchall()
        assert len(rows) == 1
        assert rows[0][0] == 200 and rows[0][1].startswith("cannot store the entry: Overflow")
        assert bytes(rows[0][2]) == b'{"raw":2}'
        events = conn.execute("SELECT events FROM sessions WHERE session_id='s1'").fetchone()
        assert events == (2,)
    finally:
        conn.close()


def test_a_pass_opens_no_savepoint(tmp_path: Path) -> None:
    # With the search index's trigger, a savepoint around the batch's insert doubled the bytes
    # written per entry (every page the insert touches was also written to a statement journal).
    paths = make_state(tmp_path)
    spool(paths, *(base("UserPromptSubmit", prompt=f"prompt {i}") for i in range(50)))
    writer = open_writer(paths, Config())
    statements: list[str] = []
    writer.conn.set_trace_callback(statements.append)
    try:
        assert writer.pass_once().entries == 50
    finally:
        writer.conn.set_trace_callback(None)
        writer.close()
    assert any(s.startswith("INSERT OR IGNORE INTO entries") for s in statements)
    assert not [s for s in statements if s.split(" ")[0] in ("SAVEPOINT", "RELEASE")]
