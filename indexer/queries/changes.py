"""What a consumer copying the index elsewhere reads: entries by id, their catalog, deletions.

The team store (summarizer/team) ships what ingest committed through these queries, on a
read-only connection of its own: it never writes the index (I8). Reads that must agree with
each other (the deletions, then the entries after them) run inside one `snapshot`. Only
sqlite3 is imported; rows are plain tuples.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from indexer.errors import translate_sqlite_errors

__all__ = [
    "AGENT_COLUMNS",
    "ENTRY_COLUMNS",
    "SESSION_COLUMNS",
    "Purge",
    "PurgeLog",
    "agent_rows",
    "count_after",
    "entry_rows_after",
    "index_id",
    "purges_after",
    "session_rows",
    "snapshot",
    "top_entry_id",
]

_guard = translate_sqlite_errors

# The columns `entry_rows_after` returns, in order. `command` is a Bash call's command line,
# taken from its stored (redacted) input as the search index takes it; the raw `detail`
# itself is not returned.
ENTRY_COLUMNS = (
    "id",
    "ts_ns",
    "session_id",
    "hook_event",
    "event",
    "agent_id",
    "agent_type",
    "cc_agent_id",
    "tool_name",
    "tool_use_id",
    "description",
    "instruction",
    "output_summary",
    "error",
    "files",
    "text",
    "cwd",
    "command",
)
_COMMAND_SQL = (
    "CASE WHEN tool_name='Bash' AND json_valid(CAST(detail AS TEXT)) THEN"
    " coalesce(json_extract(CAST(detail AS TEXT), '$.input.command'), '') ELSE '' END"
)
_ENTRY_SELECT = "SELECT " + ", ".join(ENTRY_COLUMNS[:-1]) + f", {_COMMAND_SQL} FROM entries"
SESSION_COLUMNS = (
    "session_id",
    "first_ns",
    "last_ns",
    "cwd",
    "title",
    "first_prompt",
    "events",
    "failures",
    "status",
    "end_reason",
    "compactions",
    "host",
)
AGENT_COLUMNS = (
    "session_id",
    "agent_id",
    "agent_type",
    "cc_agent_id",
    "status",
    "started_ns",
    "last_ns",
    "completed_ns",
    "description",
)
_TEXT_COLUMNS = range(10, 18)  # the text columns of an entry row, for its size in bytes


@dataclass(frozen=True, slots=True)
class Purge:
    """One deletion from the purge log (see indexer.retention.purge.log_purge)."""

    seq: int
    kind: str  # "session" or "before"
    session_id: str
    before_ns: int
    max_entry_id: int


@dataclass(frozen=True, slots=True)
class PurgeLog:
    """The deletions after a sequence number, and whether the log still holds all of them."""

    purges: list[Purge]
    last_seq: int  # the newest sequence number ever given (0: none)
    complete: bool  # False: deletions after the asked number were trimmed from the log


@contextlib.contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """Every read inside sees the index as of its first read (one WAL read transaction)."""
    with _guard("snapshot"):
        conn.execute("BEGIN")
    try:
        yield
    finally:
        with _guard("snapshot"):
            conn.execute("ROLLBACK")


@_guard("meta")
def index_id(conn: sqlite3.Connection) -> str:
    """The random id of this index file ("" until a writer of this version opened it)."""
    row = conn.execute("SELECT value FROM meta WHERE key='index_id'").fetchone()
    return str(row[0]) if row else ""


@_guard("entries")
def top_entry_id(conn: sqlite3.Connection) -> int:
    """The newest entry's id (0 for an empty index)."""
    return int(conn.execute("SELECT coalesce(max(id), 0) FROM entries").fetchone()[0])


@_guard("entries")
def count_after(conn: sqlite3.Connection, after_id: int) -> int:
    """How many entries have an id above `after_id`."""
    return int(conn.execute("SELECT count(*) FROM entries WHERE id>?", (after_id,)).fetchone()[0])


@_guard("entries")
def entry_rows_after(
    conn: sqlite3.Connection, after_id: int, max_rows: int, max_bytes: int
) -> list[tuple[Any, ...]]:
    """Entries with id > after_id, oldest first, as `ENTRY_COLUMNS` tuples: at most
    `max_rows`, and no more than `max_bytes` of text (always at least one entry)."""
    rows = conn.execute(
        f"{_ENTRY_SELECT} WHERE id>? ORDER BY id LIMIT ?", (after_id, max_rows)
    ).fetchall()
    total = 0
    for n, row in enumerate(rows):
        total += sum(len(row[i]) for i in _TEXT_COLUMNS)
        if total > max_bytes and n:
            return rows[:n]
    return rows


@_guard("sessions")
def session_rows(conn: sqlite3.Connection, session_ids: Sequence[str]) -> list[tuple[Any, ...]]:
    """The catalog rows (`SESSION_COLUMNS`) of these sessions."""
    return _by_session(conn, "sessions", SESSION_COLUMNS, session_ids)


@_guard("agents")
def agent_rows(conn: sqlite3.Connection, session_ids: Sequence[str]) -> list[tuple[Any, ...]]:
    """The agents (`AGENT_COLUMNS`) of these sessions."""
    return _by_session(conn, "agents", AGENT_COLUMNS, session_ids)


def _by_session(
    conn: sqlite3.Connection, table: str, columns: Sequence[str], session_ids: Sequence[str]
) -> list[tuple[Any, ...]]:
    found: list[tuple[Any, ...]] = []
    for at in range(0, len(session_ids), 500):  # under SQLite's limit of bound values
        chunk = list(session_ids[at : at + 500])
        marks = ",".join("?" * len(chunk))
        found += conn.execute(
            f"SELECT {', '.join(columns)} FROM {table} WHERE session_id IN ({marks})", chunk
        ).fetchall()
    return found


@_guard("purge log")
def purges_after(conn: sqlite3.Connection, seq: int) -> PurgeLog:
    """The deletions recorded after sequence number `seq`, oldest first."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='purge_log'"
    ).fetchone()
    if exists is None:
        return PurgeLog([], 0, True)
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name='purge_log'").fetchone()
    last = int(row[0]) if row else 0
    rows = conn.execute(
        "SELECT seq, kind, session_id, before_ns, max_entry_id FROM purge_log WHERE seq>?"
        " ORDER BY seq",
        (seq,),
    ).fetchall()
    purges = [Purge(int(r[0]), str(r[1]), str(r[2]), int(r[3]), int(r[4])) for r in rows]
    # Sequence numbers have no gaps: a first one above seq + 1 means some were trimmed.
    complete = last <= seq or bool(purges and purges[0].seq == seq + 1)
    return PurgeLog(purges, last, complete)
