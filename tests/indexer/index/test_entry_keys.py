"""indexer/index/keys.py and the entries table's indexes: each serves a read or a unique key,
the reads by session and agent use them, and an index from an older ctxd is upgraded in place."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from indexer.index import store
from indexer.index.keys import TOOL_INDEX, replace_old_tool_index
from indexer.index.transactions import transaction
from indexer.ingest.attribution import AgentRegistry
from indexer.models import Entry
from indexer.queries import history, query, readonly, recall
from indexer.queries import sessions as session_query
from indexer.retention import purge

OLD_TOOL_INDEX = "CREATE UNIQUE INDEX entries_tool ON entries(tool_key) WHERE tool_key IS NOT NULL"


def _entry(ts: int, session_id: str = "s1", **kw: Any) -> Entry:
    fields: dict[str, Any] = {
        "file_id": 1,
        "offset": ts * 10,
        "line_no": ts,
        "ts_ns": ts,
        "pid": 7,
        "session_id": session_id,
        "hook_event": "PostToolUse",
        "event": "tool_result",
        "tool_use_id": f"tu{ts}",
    }
    fields.update(kw)
    return Entry(**fields)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    conn = store.connect(tmp_path / "index.db")
    with transaction(conn):
        store.insert_entries(
            conn,
            [
                _entry(t, "s1" if t % 2 else "s2", agent_id="main" if t % 3 else "qa")
                for t in range(1, 60)
            ],
        )
        conn.execute(
            "INSERT INTO agents(session_id, agent_id, agent_type, started_ns, last_ns)"
            " VALUES ('s1', 'qa', 'tester', 3, 57)"
        )
    yield conn
    conn.close()


def entry_indexes(conn: sqlite3.Connection) -> dict[str, bool]:
    """The entries table's indexes and whether each is unique."""
    return {str(r[1]): bool(r[2]) for r in conn.execute("PRAGMA index_list(entries)")}


# The read paths that look entries up by session, agent or time, as the commands call them.
READS: list[tuple[str, Callable[[sqlite3.Connection], object]]] = [
    ("agent view rebuild", lambda c: list(store.agent_entries(c, "s1", "qa"))),
    ("ctxd read", lambda c: recall.latest_agent_entries(c, "s1", "qa", 20)),
    ("agent count", lambda c: readonly.count_agent_entries(c, "s1", "qa")),
    ("session entries", lambda c: session_query.session_entries(c, "s1", 20)),
    ("session entry count", lambda c: session_query.session_entry_count(c, "s1")),
    ("agent last run", lambda c: session_query.agent_last_run(c, "qa")),
    ("recent entries", lambda c: history.recent_entries(c, "s1", "failures", 10)),
    ("session history", lambda c: history.session_entries(c, "s1", 10)),
    ("has history", lambda c: query.has_history(c, "s1")),
    ("last entry", lambda c: query.last_entry(c, "s1")),
    ("newest activity", lambda c: query.newest_activity_ns(c, "s1")),
    ("prompts", lambda c: query.session_prompts(c, "s1")),
    ("retention by age", lambda c: purge.delete_entries_before(c, 10)),
    ("forget a session", lambda c: purge.delete_session_rows(c, "s2", ("entries",))),
    ("a session's agent calls", lambda c: AgentRegistry(c)._session("s1")),
]


def plans(conn: sqlite3.Connection, call: Callable[[sqlite3.Connection], object]) -> list[str]:
    """The query plan lines, for the entries table, of every statement `call` runs."""
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        conn.execute("BEGIN")
        try:
            call(conn)
        finally:
            conn.execute("ROLLBACK")  # the deleting paths leave the fixture as it was
    finally:
        conn.set_trace_callback(None)
    lines = []
    for sql in statements:
        if " entries" in sql and not sql.startswith(("BEGIN", "ROLLBACK")):
            for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}"):
                if str(row[3]).split(" ")[1:2] == ["entries"]:
                    lines.append(str(row[3]))
    return lines


@pytest.mark.parametrize(("name", "call"), READS, ids=[name for name, _ in READS])
def test_each_read_by_session_agent_or_time_searches_an_index(
    db: sqlite3.Connection, name: str, call: Callable[[sqlite3.Connection], object]
) -> None:
    lines = plans(db, call)
    assert lines, f"{name} read nothing from entries"
    for line in lines:
        # "SEARCH entries" alone is a search of the rowid's own b-tree (max(id)), not a scan.
        assert line.startswith("SEARCH entries USING") or line == "SEARCH entries", (name, line)


def test_every_index_of_entries_serves_a_read_or_a_unique_key(db: sqlite3.Connection) -> None:
    used = {
        line.split(" INDEX ")[1].split(" ")[0]
        for _, call in READS
        for line in plans(db, call)
        if " INDEX " in line
    }
    indexes = entry_indexes(db)
    unique = {name for name, is_unique in indexes.items() if is_unique}
    assert unique == {"entries_event", "entries_session_tool"}  # the two dedupe keys (I3)
    assert set(indexes) - unique <= used  # every other index is searched by some read
    assert "entries_event" in used  # retention by age


def test_the_tool_key_is_unique_within_a_session_only(db: sqlite3.Connection) -> None:
    with transaction(db):
        again = store.insert_entries(
            db,
            [
                _entry(1001, "s1", tool_use_id="tu1"),  # delivered twice: dropped
                _entry(1002, "s3", tool_use_id="tu1"),  # the same call id in another session
                _entry(1003, "s1", tool_use_id="tu1", hook_event="PreToolUse"),
            ],
        )
    assert [se.entry.ts_ns for se in again] == [1002, 1003]


def old_index(path: Path) -> None:
    """An index as an older ctxd wrote it: the tool key indexed alone."""
    conn = store.connect(path)
    with transaction(conn):
        store.insert_entries(conn, [_entry(t) for t in range(1, 6)])
        conn.execute("DROP INDEX entries_session_tool")
        conn.execute(OLD_TOOL_INDEX)
    conn.close()


def test_an_index_from_an_older_ctxd_gets_the_session_led_key_on_open(tmp_path: Path) -> None:
    old_index(tmp_path / "index.db")
    conn = store.connect(tmp_path / "index.db")
    try:
        assert entry_indexes(conn) == {
            "entries_agent": False,
            "entries_agent_calls": False,
            "entries_session_tool": True,
            "entries_event": True,
        }
        with transaction(conn):
            stored = store.insert_entries(conn, [_entry(100, tool_use_id="tu3"), _entry(101)])
        assert [se.entry.ts_ns for se in stored] == [101]  # tu3 was stored by the old ctxd
        assert store.count(conn, "entries") == 6
        assert replace_old_tool_index(conn) is False  # once only
    finally:
        conn.close()


def test_a_failed_upgrade_keeps_the_old_index(tmp_path: Path) -> None:
    old_index(tmp_path / "index.db")
    conn = sqlite3.connect(tmp_path / "index.db", isolation_level=None)
    try:
        # Two rows the new key would refuse (the old key let them in: it was a hash collision
        # across sessions... or a damaged index); the upgrade must roll back, not half-apply.
        conn.execute("DROP INDEX entries_tool")
        conn.execute("UPDATE entries SET tool_key=42, session_id='s1' WHERE id IN (1, 2)")
        conn.execute(OLD_TOOL_INDEX.replace("UNIQUE ", ""))
        with pytest.raises(sqlite3.IntegrityError):
            replace_old_tool_index(conn)
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert "entries_tool" in names and "entries_session_tool" not in names
        assert not conn.in_transaction
    finally:
        conn.close()


def test_the_index_statement_is_the_one_of_a_new_index(tmp_path: Path) -> None:
    conn = store.connect(tmp_path / "index.db")
    try:
        sql = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name='entries_session_tool'"
        ).fetchone()[0]
    finally:
        conn.close()
    assert sql == TOOL_INDEX.replace(" IF NOT EXISTS", "")
