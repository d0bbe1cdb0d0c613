"""Connections for a search: read-only, and only when the search index covers everything."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from indexer.queries.readonly import connect_readonly, index_is_current
from indexer.search.index import has_search

__all__ = ["open_current", "open_readonly"]


def open_current(index_db: Path, spool: Path) -> sqlite3.Connection | None:
    """A read-only connection if the search index covers every event and memory item now:
    every complete spool line indexed, the memory folded up to the last entry. Else None."""
    conn = connect_readonly(index_db)
    if conn is None:
        return None
    if has_search(conn) and index_is_current(conn, spool) and _memory_is_current(conn):
        return conn
    conn.close()
    return None


def open_readonly(index_db: Path) -> sqlite3.Connection | None:
    """A read-only connection to the index (None if there is none, or of another schema)."""
    return connect_readonly(index_db)


def _memory_is_current(conn: sqlite3.Connection) -> bool:
    top = conn.execute("SELECT coalesce(max(id), 0) FROM entries").fetchone()[0]
    row = conn.execute("SELECT value FROM meta WHERE key='mem.watermark'").fetchone()
    return int(row[0] if row and row[0] else 0) >= int(top)
