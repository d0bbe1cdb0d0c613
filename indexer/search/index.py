"""The full-text search index (SQLite FTS5): its schema, triggers, backfill and upkeep.

Entries reach the index through triggers on `entries`, so every writer (ingest, import) adds
them in the transaction that stores the entries (I3) and deletions (forget, retention) take
them out. Memory items (decisions, constraints, failures) are written by the memory fold
through `index_memory`. Stdlib only: `ctxd search` must start fast.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from indexer.search import merge as search_merge
from indexer.search.sql import (
    BACKFILL_ENTRIES,
    ENTRY_KINDS,
    KINDS,
    MEMORY_KINDS,
    SCHEMA,
    TRIGGERS,
)

__all__ = [
    "ENTRY_KINDS",
    "KINDS",
    "MEMORY_KINDS",
    "SEARCH_VERSION",
    "MemoryDoc",
    "count_documents",
    "ensure",
    "failure_body",
    "has_search",
    "hex_tag",
    "index_entries_after",
    "index_memory",
    "merge_segments",
    "rebuild",
]

SEARCH_VERSION = "3"
_VERSION_KEY = "search.version"


@dataclass(frozen=True, slots=True)
class MemoryDoc:
    """One memory item to make searchable: a decision, constraint or failure."""

    kind: str
    key: str
    session_id: str
    agent_id: str
    ts_ns: int
    body: str


def has_search(conn: sqlite3.Connection) -> bool:
    """True if the index has the search index this version builds (a writer opened it)."""
    return _version(conn) == SEARCH_VERSION


def index_entries_after(conn: sqlite3.Connection, after_id: int) -> None:
    """Index the entries stored with ids above `after_id` (the caller's batch, in its own
    transaction: an entry and its document commit together)."""
    if has_search(conn):
        conn.execute(BACKFILL_ENTRIES + " AND new.id > ?", (after_id,))


def _version(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key=?", (_VERSION_KEY,)).fetchone()
    return None if row is None else str(row[0])


def _set_version(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (_VERSION_KEY, SEARCH_VERSION)
    )


def ensure(conn: sqlite3.Connection) -> bool:
    """Create the search index if missing and fill it from what is stored; True if it did.

    The caller holds the writer lock (I8). Runs in its own transaction, so an index written by
    an older ctxd gains its search index at once, entries and memory alike; a search index of
    another version (other triggers, other documents) is dropped and built again.
    """
    if has_search(conn):
        return False
    conn.execute("BEGIN IMMEDIATE")
    try:
        if _version(conn) == "2":  # same documents: only the insert trigger goes
            conn.execute("DROP TRIGGER IF EXISTS search_entry_ai")
            _set_version(conn)
        elif not has_search(conn):
            for trigger in TRIGGERS:
                conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
            conn.execute("DROP TABLE IF EXISTS search")
            conn.execute("DROP TABLE IF EXISTS search_mem")
            for statement in _statements(SCHEMA):
                conn.execute(statement)
            _fill(conn)
            _set_version(conn)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return True


def rebuild(conn: sqlite3.Connection) -> int:
    """Empty the search index and fill it again from entries and memory, in one transaction
    (the caller holds the writer lock); return how many documents it holds."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("DELETE FROM search_mem")
        conn.execute("DELETE FROM search")
        _fill(conn)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return count_documents(conn)


def _fill(conn: sqlite3.Connection) -> None:
    conn.execute(BACKFILL_ENTRIES)
    index_memory(conn, _stored_memory(conn))


def _statements(script: str) -> list[str]:
    """Split a schema script into statements, keeping trigger bodies whole."""
    out: list[str] = []
    current = ""
    for part in script.split(";"):
        current += part + ";"
        if sqlite3.complete_statement(current):
            if current.strip(" \n;"):
                out.append(current.strip())
            current = ""
    return out


def index_memory(conn: sqlite3.Connection, docs: Iterable[MemoryDoc]) -> None:
    """Add or replace memory items in the search index (in the caller's transaction)."""
    next_doc: int | None = None
    for d in docs:
        row = conn.execute(
            "SELECT doc FROM search_mem WHERE kind=? AND key=?", (d.kind, d.key)
        ).fetchone()
        if row is not None:
            doc = int(row[0])
            conn.execute("DELETE FROM search WHERE rowid=?", (doc,))
            conn.execute("UPDATE search_mem SET session_id=? WHERE doc=?", (d.session_id, doc))
        else:
            if next_doc is None:
                low = conn.execute("SELECT coalesce(min(doc), 0) FROM search_mem").fetchone()[0]
                next_doc = min(int(low), 0) - 1
            doc, next_doc = next_doc, next_doc - 1  # memory items take negative ids
            conn.execute(
                "INSERT INTO search_mem(kind, key, doc, session_id) VALUES (?,?,?,?)",
                (d.kind, d.key, doc, d.session_id),
            )
        conn.execute(
            "INSERT INTO search(rowid, body, tags, kind, session_id, agent_id, ts_ns)"
            " VALUES (?,?,?,?,?,?,?)",
            (doc, d.body, _tags(d), d.kind, d.session_id, d.agent_id, d.ts_ns),
        )


def _tags(d: MemoryDoc) -> str:
    """The filter tokens of a memory document (as _TAGS_SQL writes them for events)."""
    return f"k{d.kind} s{hex_tag(d.session_id)} a{hex_tag(d.agent_id)}"


def hex_tag(text: str) -> str:
    return text.encode("utf-8", "surrogatepass").hex()


def _stored_memory(conn: sqlite3.Connection) -> list[MemoryDoc]:
    names = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    docs: list[MemoryDoc] = []
    if "mem_decisions" in names:
        for key, body, sid, agent, ts in conn.execute(
            "SELECT id, decision, session_id, agent_id, last_ns FROM mem_decisions"
        ):
            docs.append(MemoryDoc("decision", key, sid, agent, ts, body))
    if "mem_constraints" in names:
        for key, body, sid, ts in conn.execute(
            "SELECT id, description, session_id, last_ns FROM mem_constraints"
        ):
            docs.append(MemoryDoc("constraint", key, sid, "", ts, body))
    if "mem_failures" in names:
        for key, desc, cmd, err, prevention, sid, agent, ts in conn.execute(
            "SELECT signature, description, command, last_error, prevention, session_id,"
            " agent_id, last_ns FROM mem_failures"
        ):
            docs.append(
                MemoryDoc("failure", key, sid, agent, ts, failure_body(desc, cmd, err, prevention))
            )
    return docs


def failure_body(description: str, command: str, error: str, prevention: str) -> str:
    """The searchable text of a failure: what failed, how, and what prevents it."""
    return " ".join(p for p in (description, command, error, prevention) if p)


# --- queries -----------------------------------------------------------------------------


def merge_segments(conn: sqlite3.Connection, *, lock: Any = None, should_stop: Any = None) -> int:
    """Merge the search index toward one segment once it has many, in bounded steps."""
    return search_merge.merge_some(
        conn, lock=lock, should_stop=should_stop, above=search_merge.MERGE_ABOVE
    )


def count_documents(conn: sqlite3.Connection) -> int:
    """How many documents the search index holds."""
    return int(conn.execute("SELECT count(*) FROM search").fetchone()[0])
