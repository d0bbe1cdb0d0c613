"""Read-only queries behind the `ctxd` porcelain: catch-up progress, agents, emit's session."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from indexer.paths import StatePaths
from indexer.queries.readonly import connect_readonly, spool_sizes, unwritable_reason

__all__ = [
    "active_constraint",
    "agent_listing",
    "indexed_offsets",
    "newest_active_session",
    "open_readonly",
    "spool_behind",
    "unwritable_reason",
]


def open_readonly(index_db: Path) -> sqlite3.Connection | None:
    """A read-only connection to the index, or None if there is none (or another schema)."""
    return connect_readonly(index_db)


def spool_behind(paths: StatePaths) -> int:
    """Bytes of spool not yet indexed."""
    conn = connect_readonly(paths.index_db)
    offsets: dict[str, int] = {}
    if conn is not None:
        try:
            offsets = indexed_offsets(conn)
        except sqlite3.Error:  # the writer may be creating the tables right now
            offsets = {}
        finally:
            conn.close()
    sizes = spool_sizes(paths.spool)
    return sum(max(0, size - offsets.get(name, 0)) for name, size in sizes.items())


def indexed_offsets(conn: sqlite3.Connection) -> dict[str, int]:
    """How far each active spool segment is indexed (bytes)."""
    return dict(conn.execute("SELECT name, offset FROM files WHERE active=1").fetchall())


def agent_listing(conn: sqlite3.Connection, session_id: str) -> list[dict[str, Any]]:
    """A session's agents, oldest first: type, status, first instruction and counts."""
    rows = conn.execute(
        "SELECT a.agent_id, a.agent_type, a.status, a.cc_agent_id, a.description,"
        " a.started_ns, a.last_ns,"
        " (SELECT count(*) FROM entries e WHERE e.session_id=a.session_id"
        "  AND e.agent_id=a.agent_id),"
        " (SELECT count(*) FROM entries e WHERE e.session_id=a.session_id"
        "  AND e.agent_id=a.agent_id AND e.tool_name!=''"
        "  AND e.hook_event IN ('PostToolUse', 'PostToolUseFailure')),"
        " (SELECT count(*) FROM entries e WHERE e.session_id=a.session_id"
        "  AND e.agent_id=a.agent_id AND e.error!=''),"
        " (SELECT e.instruction FROM entries e WHERE e.session_id=a.session_id"
        "  AND e.agent_id=a.agent_id AND e.instruction!='' ORDER BY e.ts_ns, e.pid LIMIT 1)"
        " FROM agents a WHERE a.session_id=? ORDER BY a.started_ns, a.agent_id",
        (session_id,),
    ).fetchall()
    return [
        {
            "agent_id": r[0],
            "agent_type": r[1],
            "status": r[2],
            "cc_agent_id": r[3],
            "description": r[4],
            "started_ns": r[5],
            "last_ns": r[6],
            "entries": r[7],
            "tool_calls": r[8],
            "failures": r[9],
            "instruction": r[10] or r[4] or "",
        }
        for r in rows
    ]


def newest_active_session(conn: sqlite3.Connection, exclude: tuple[str, ...]) -> str | None:
    """The most recently active session that has not ended, other than `exclude`."""
    marks = ",".join("?" * len(exclude)) or "''"
    row = conn.execute(
        f"SELECT session_id FROM sessions WHERE status='active' AND session_id NOT IN ({marks})"
        " ORDER BY last_ns DESC LIMIT 1",
        exclude,
    ).fetchone()
    return str(row[0]) if row else None


def active_constraint(conn: sqlite3.Connection, keys: tuple[str, ...]) -> str | None:
    """The description of the active constraint whose id is one of `keys`, if any."""
    for key in keys:
        try:
            row = conn.execute(
                "SELECT description FROM mem_constraints WHERE id=? AND active=1", (key,)
            ).fetchone()
        except sqlite3.OperationalError:  # no memory folded yet: no constraint either
            return None
        if row:
            return str(row[0])
    return None
