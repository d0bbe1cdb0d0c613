"""Read queries of the recall tools: an agent's latest entries, failures, decisions, rules."""

from __future__ import annotations

import sqlite3
from typing import Any

from indexer.index.store import ENTRY_COLUMNS, StoredEntry, row_to_entry
from indexer.queries.readonly import latest_session_with_agent

__all__ = [
    "active_constraints",
    "decisions",
    "failures",
    "latest_agent_entries",
    "latest_session_with_agent",
]


def latest_agent_entries(
    conn: sqlite3.Connection, session_id: str, agent_id: str, limit: int
) -> list[StoredEntry]:
    """The last `limit` entries of one agent in one session, oldest first (by event time)."""
    rows = conn.execute(
        f"SELECT {ENTRY_COLUMNS} FROM entries WHERE session_id=? AND agent_id=?"
        " ORDER BY ts_ns DESC, pid DESC LIMIT ?",
        (session_id, agent_id, limit),
    ).fetchall()
    return [row_to_entry(r) for r in reversed(rows)]


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,))
    return row.fetchone() is not None


def failures(conn: sqlite3.Connection, limit: int, session_id: str | None = None) -> list[Any]:
    """Failures, unresolved first, then the newest: (description, command, last_error,
    prevention, count, last_ns, resolved_ns, is_open, session_id)."""
    if not _has_table(conn, "mem_failures"):
        return []
    where, args = ("WHERE session_id=?", [session_id]) if session_id else ("", [])
    return conn.execute(
        "SELECT description, command, last_error, prevention, count, last_ns, resolved_ns,"
        " resolved_entry_id < last_entry_id AS is_open, session_id FROM mem_failures"
        f" {where} ORDER BY is_open DESC, last_ns DESC LIMIT ?",
        [*args, limit],
    ).fetchall()


def decisions(conn: sqlite3.Connection, limit: int) -> list[Any]:
    """The best-ranked decisions in force: (decision, session_id, last_ns, count). A decision
    a later statement retired stays searchable, not listed here."""
    if not _has_table(conn, "mem_decisions"):
        return []
    columns = {str(r[1]) for r in conn.execute("PRAGMA table_info(mem_decisions)")}
    in_force = "WHERE retired_ns=0" if "retired_ns" in columns else ""
    return conn.execute(
        f"SELECT decision, session_id, last_ns, count FROM mem_decisions {in_force}"
        " ORDER BY rank_key DESC, last_entry_id DESC LIMIT ?",
        (limit,),
    ).fetchall()


def active_constraints(conn: sqlite3.Connection, limit: int) -> list[Any]:
    """The constraints in force, newest first: (description, session_id, last_ns)."""
    if not _has_table(conn, "mem_constraints"):
        return []
    return conn.execute(
        "SELECT description, session_id, last_ns FROM mem_constraints WHERE active=1"
        " ORDER BY last_entry_id DESC LIMIT ?",
        (limit,),
    ).fetchall()
