"""The index's delete API: retention and `ctxd forget` remove rows through these functions.

Every deletion of entries is also written to `purge_log`, in the transaction that deletes
them, so that a consumer copying the index elsewhere (the team store) learns of it exactly
once, even if it is down when the deletion happens.
"""

from __future__ import annotations

import sqlite3
import time

from indexer.errors import translate_sqlite_errors
from indexer.index.transactions import transaction
from indexer.paths import StatePaths
from indexer.views import rebuild as view_rebuild

__all__ = [
    "compact_file",
    "delete_entries_before",
    "delete_quarantine_before",
    "delete_session_rows",
    "expire_before",
    "log_purge",
]

_guard = translate_sqlite_errors
# Tables keyed by session id that retention clears for a session wholly past the cutoff.
_RETENTION_TABLES = ("sessions", "agents", "agent_aliases", "dirty_views")
# The log keeps this many deletions; a consumer that falls further behind copies afresh.
PURGE_LOG_KEEP = 10_000


@_guard("entries")
def delete_entries_before(conn: sqlite3.Connection, cutoff_ns: int) -> int:
    """Delete entries older than `cutoff_ns` (inside the caller's transaction); how many."""
    return int(conn.execute("DELETE FROM entries WHERE ts_ns<?", (cutoff_ns,)).rowcount)


@_guard("sessions")
def delete_session_rows(
    conn: sqlite3.Connection, session_id: str, tables: tuple[str, ...] = _RETENTION_TABLES
) -> int:
    """Delete one session's rows from `tables` (those that exist); how many rows went.

    Table names come from the caller's constant tuples, never from input; a name that is not
    a table of this database is skipped (memory tables exist only after a compaction).
    """
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
    existing = {str(r[0]) for r in rows}
    count = 0
    for table in tables:
        if table in existing:
            count += conn.execute(f"DELETE FROM {table} WHERE session_id=?", (session_id,)).rowcount
    if count and "entries" in tables:
        log_purge(conn, "session", session_id=session_id)
    return count


def log_purge(
    conn: sqlite3.Connection, kind: str, *, session_id: str = "", before_ns: int = 0
) -> None:
    """Record a deletion just made in the caller's transaction: a whole session ("session")
    or every entry older than `before_ns` with the sessions wholly older ("before"). The
    table is made by indexer.index.schema when a writer opens the index."""
    conn.execute(
        "INSERT INTO purge_log(kind, session_id, before_ns, max_entry_id, ts_ns)"
        " VALUES (?, ?, ?, (SELECT coalesce(max(id), 0) FROM entries), ?)",
        (kind, session_id, before_ns, time.time_ns()),
    )
    conn.execute(
        "DELETE FROM purge_log WHERE seq <= (SELECT max(seq) FROM purge_log) - ?",
        (PURGE_LOG_KEEP,),
    )


def session_has_rows(
    conn: sqlite3.Connection, session_id: str, tables: tuple[str, ...] = _RETENTION_TABLES
) -> bool:
    """True if any of `tables` (those that exist) still holds a row of `session_id`."""
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
    existing = {str(r[0]) for r in rows}
    return any(
        conn.execute(f"SELECT 1 FROM {table} WHERE session_id=? LIMIT 1", (session_id,)).fetchone()
        for table in tables
        if table in existing
    )


@_guard("quarantine")
def delete_quarantine_before(conn: sqlite3.Connection, before_ns: int) -> int:
    """Delete quarantined lines older than `before_ns`; how many."""
    return int(conn.execute("DELETE FROM quarantine WHERE ts_ns<?", (before_ns,)).rowcount)


@_guard("index")
def compact_file(conn: sqlite3.Connection) -> None:
    """Rewrite the database and truncate its WAL, so deleted rows leave the disk."""
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def expire_before(
    conn: sqlite3.Connection, paths: StatePaths, cutoff_ns: int
) -> tuple[int, list[str]]:
    """Delete entries older than `cutoff_ns` and the sessions wholly older, then rebuild the
    views from what is left. Returns (entries deleted, ids of the sessions deleted).

    The rebuild request commits with the deletion, so a kill at any later point is finished by
    the next writer.
    """
    with _guard("retention"):
        gone = [
            str(r[0])
            for r in conn.execute("SELECT session_id FROM sessions WHERE last_ns<?", (cutoff_ns,))
        ]
        with transaction(conn):
            entries = delete_entries_before(conn, cutoff_ns)
            for sid in gone:
                delete_session_rows(conn, sid)
            if entries or gone:
                log_purge(conn, "before", before_ns=cutoff_ns)
                view_rebuild.request(conn)
        if entries or gone:
            with transaction(conn):
                view_rebuild.rebuild(conn, paths)
    return entries, gone
