"""The index's entry API for the summarizer: whole entries, meta, transactions, opened safely.

The summarizer reads entries and keeps its watermarks in `meta` through these functions only;
sqlite3's errors leave as ctxd's own (see `indexer.errors`). This module loads msgspec (an
Entry is a msgspec struct): the light paths use `indexer.queries.query` instead.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from indexer.errors import IndexUnavailableError, translate_sqlite_errors
from indexer.index import store, transactions
from indexer.index.store import StoredEntry
from indexer.models import Entry
from indexer.queries.query import TODO_FILTER
from indexer.spool.tailer import FileState

__all__ = [
    "StoredEntry",
    "active_files",
    "connect",
    "count",
    "entries_after",
    "events_between",
    "get_meta",
    "max_entry_id",
    "recent_edits",
    "recent_entries",
    "session_entries",
    "set_cache_size",
    "set_meta",
    "todo_and_trigger_events",
    "todo_entries",
    "transaction",
]

_guard = translate_sqlite_errors

# Named entry filters for `recent_entries` (SQL stays here, callers pick by name).
_FILTERS = {
    "any": "1",
    "file_events": "files<>'' AND event IN ('tool_use','tool_result')",
    "failures": "event IN ('tool_failure','tool_result')",
    "prompt": "event='prompt'",
    "compact_summary": "event IN ('post_compact','compact_summary') AND text<>''",
}


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open the index (creating it unless `readonly`); IndexUnavailableError if `readonly` and
    there is none, IndexCorruptError if it cannot be used."""
    if readonly and not path.exists():
        raise IndexUnavailableError(
            f"{path}: no index yet; start a Claude Code session here, then run `ctxd ingest`"
        )
    with _guard(str(path)):
        return store.connect(path, readonly=readonly)


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """BEGIN IMMEDIATE … COMMIT, rolled back on any exception; a stuck lock: IndexLockedError."""
    with _guard("transaction"), transactions.transaction(conn):
        yield


@_guard("meta")
def get_meta(conn: sqlite3.Connection, key: str, default: str = "") -> str:
    """A value of the index's key/value table."""
    return store.get_meta(conn, key, default)


@_guard("meta")
def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    """Set a value of the index's key/value table (inside the caller's transaction)."""
    store.set_meta(conn, key, value)


@_guard("entries")
def max_entry_id(conn: sqlite3.Connection) -> int:
    """The newest entry's id (0 for an empty index)."""
    return store.max_entry_id(conn)


@_guard("entries")
def entries_after(conn: sqlite3.Connection, after_id: int, limit: int = 10000) -> list[StoredEntry]:
    """Entries with id > after_id, oldest first."""
    return store.entries_after(conn, after_id, limit)


@_guard("entries")
def entry_span(conn: sqlite3.Connection, after_id: int, upto_id: int) -> tuple[int, int]:
    """(how many, the largest id) of the entries with after_id < id <= upto_id."""
    row = conn.execute(
        "SELECT count(*), coalesce(max(id), 0) FROM entries WHERE id>? AND id<=?",
        (after_id, upto_id),
    ).fetchone()
    return int(row[0]), int(row[1])


@_guard("index")
def count(conn: sqlite3.Connection, table: str) -> int:
    """Row count of one of the index's own tables."""
    return store.count(conn, table)


@_guard("index")
def set_cache_size(conn: sqlite3.Connection, kib: int) -> None:
    """Give this connection a page cache of `kib` KiB."""
    conn.execute(f"PRAGMA cache_size=-{int(kib)}")


@_guard("entries")
def recent_entries(
    conn: sqlite3.Connection, session_id: str, kind: str, limit: int, events: tuple[str, ...] = ()
) -> list[Entry]:
    """The session's newest `limit` entries of one kind (see _FILTERS; "events": those whose
    event is one of `events`), newest first by event time (an imported older event stored
    after newer ones is older)."""
    where = f"event IN ({','.join('?' * len(events))})" if kind == "events" else _FILTERS[kind]
    rows = conn.execute(
        f"SELECT {store.ENTRY_COLUMNS} FROM entries WHERE session_id=? AND {where}"
        " ORDER BY ts_ns DESC, pid DESC LIMIT ?",
        (session_id, *events, limit),
    ).fetchall()
    return [store.row_to_entry(r).entry for r in rows]


@_guard("entries")
def session_entries(conn: sqlite3.Connection, session_id: str, last: int) -> list[Entry]:
    """The session's last `last` entries, oldest first."""
    return list(reversed(recent_entries(conn, session_id, "any", last)))


@_guard("entries")
def todo_entries(conn: sqlite3.Connection, session_id: str) -> list[Entry]:
    """The session's entries that change its todo list, oldest first (by event time)."""
    rows = conn.execute(
        f"SELECT {store.ENTRY_COLUMNS} FROM entries WHERE session_id=? AND {TODO_FILTER}"
        " ORDER BY ts_ns, pid",
        (session_id,),
    ).fetchall()
    return [store.row_to_entry(r).entry for r in rows]


@_guard("entries")
def events_between(
    conn: sqlite3.Connection, after_id: int, upto_id: int, events: tuple[str, ...]
) -> list[tuple[str, str, str, bytes]]:
    """(session_id, event, agent_id, detail) of entries after_id < id <= upto_id with one of
    `events`, in id order."""
    marks = ",".join("?" * len(events))
    return conn.execute(
        "SELECT session_id, event, agent_id, detail FROM entries WHERE id>? AND id<=?"
        f" AND event IN ({marks}) ORDER BY id",
        (after_id, upto_id, *events),
    ).fetchall()


@_guard("entries")
def todo_and_trigger_events(
    conn: sqlite3.Connection, after_id: int, upto_id: int
) -> list[tuple[str, str, int]]:
    """(session_id, event, id) of todo changes, PreCompact and SessionEnd in an id range."""
    return conn.execute(
        "SELECT session_id, event, id FROM entries WHERE id>? AND id<=?"
        f" AND ({TODO_FILTER} OR event IN ('pre_compact','session_end')) ORDER BY id",
        (after_id, upto_id),
    ).fetchall()


@_guard("entries")
def recent_edits(
    conn: sqlite3.Connection, after_id: int, before_id: int, session_id: str
) -> list[tuple[str, bytes, str, str]]:
    """(files, detail, tool_name, cwd) of the session's last 20 file edits in an id range."""
    return conn.execute(
        "SELECT files, detail, tool_name, cwd FROM entries WHERE id>? AND id<? AND session_id=?"
        " AND event='tool_result' AND tool_name IN ('Edit','Write','MultiEdit','NotebookEdit')"
        " ORDER BY id DESC LIMIT 20",
        (after_id, before_id, session_id),
    ).fetchall()


@_guard("files")
def active_files(conn: sqlite3.Connection) -> dict[str, FileState]:
    """The current generation of every spool segment, by name (for deleting segments)."""
    return store.active_files(conn)
