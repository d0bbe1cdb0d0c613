"""The memory tables: their schema and the row types the fold reads and writes."""

from __future__ import annotations

import sqlite3
from dataclasses import MISSING, dataclass, fields
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS mem_decisions(
    id TEXT PRIMARY KEY, decision TEXT NOT NULL, feature_id TEXT NOT NULL, sources TEXT NOT NULL,
    session_id TEXT NOT NULL, agent_id TEXT NOT NULL, first_ns INTEGER NOT NULL,
    last_ns INTEGER NOT NULL, count INTEGER NOT NULL, entry_id INTEGER NOT NULL,
    last_entry_id INTEGER NOT NULL, rank_key REAL NOT NULL,
    retired_ns INTEGER NOT NULL DEFAULT 0, retired_by TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS mem_decision_terms(term TEXT NOT NULL, id TEXT NOT NULL,
    PRIMARY KEY(term, id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS mem_decisions_rank ON mem_decisions(rank_key);
CREATE INDEX IF NOT EXISTS mem_decisions_feature ON mem_decisions(feature_id, rank_key);
CREATE INDEX IF NOT EXISTS mem_decisions_entry ON mem_decisions(entry_id);
CREATE TABLE IF NOT EXISTS mem_failures(
    signature TEXT PRIMARY KEY, cmd_key TEXT NOT NULL, description TEXT NOT NULL,
    prevention TEXT NOT NULL, explicit_prevention INTEGER NOT NULL, tool TEXT NOT NULL,
    command TEXT NOT NULL, error_class TEXT NOT NULL, last_error TEXT NOT NULL,
    feature_id TEXT NOT NULL, sources TEXT NOT NULL, session_id TEXT NOT NULL,
    agent_id TEXT NOT NULL, count INTEGER NOT NULL, first_ns INTEGER NOT NULL,
    last_ns INTEGER NOT NULL, entry_id INTEGER NOT NULL, last_entry_id INTEGER NOT NULL,
    resolved_ns INTEGER NOT NULL, resolved_entry_id INTEGER NOT NULL, rank_key REAL NOT NULL,
    target_key TEXT NOT NULL DEFAULT '', cascades INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS mem_failures_cmd ON mem_failures(cmd_key);
CREATE INDEX IF NOT EXISTS mem_failures_rank ON mem_failures(rank_key);
CREATE INDEX IF NOT EXISTS mem_failures_feature ON mem_failures(feature_id, rank_key);
CREATE INDEX IF NOT EXISTS mem_failures_entry ON mem_failures(entry_id);
CREATE TABLE IF NOT EXISTS mem_constraints(
    id TEXT PRIMARY KEY, description TEXT NOT NULL, source TEXT NOT NULL,
    feature_id TEXT NOT NULL, session_id TEXT NOT NULL, active INTEGER NOT NULL,
    negative INTEGER NOT NULL, head TEXT NOT NULL, object TEXT NOT NULL,
    created_ns INTEGER NOT NULL, last_ns INTEGER NOT NULL, revoked_ns INTEGER NOT NULL,
    entry_id INTEGER NOT NULL, last_entry_id INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS mem_constraints_active ON mem_constraints(active, last_entry_id);
CREATE TABLE IF NOT EXISTS mem_constraint_terms(term TEXT NOT NULL, id TEXT NOT NULL,
    PRIMARY KEY(term, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS mem_features(
    id TEXT PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL, status TEXT NOT NULL,
    started_at INTEGER NOT NULL, completed_at INTEGER NOT NULL, session_id TEXT NOT NULL,
    first_entry_id INTEGER NOT NULL, last_entry_id INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS mem_features_recent ON mem_features(last_entry_id);
CREATE TABLE IF NOT EXISTS mem_files(
    path TEXT PRIMARY KEY, edits INTEGER NOT NULL, last_ns INTEGER NOT NULL,
    last_entry_id INTEGER NOT NULL, session_id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS mem_files_edits ON mem_files(edits, last_entry_id);
CREATE TABLE IF NOT EXISTS mem_sessions(
    session_id TEXT PRIMARY KEY, todos TEXT NOT NULL, prompt TEXT NOT NULL,
    report TEXT NOT NULL, compact TEXT NOT NULL);
"""


@dataclass(slots=True)
class DecisionRow:
    id: str
    decision: str
    feature_id: str
    sources: str
    session_id: str
    agent_id: str
    first_ns: int
    last_ns: int
    count: int
    entry_id: int
    last_entry_id: int
    rank_key: float = 0.0
    retired_ns: int = 0  # when a later statement gave up what it chose (0: in force)
    retired_by: str = ""  # the id of the decision that retired it ("" for a user's sentence)


@dataclass(slots=True)
class FailureRow:
    signature: str
    cmd_key: str
    description: str
    prevention: str
    explicit_prevention: int
    tool: str
    command: str
    error_class: str
    last_error: str
    feature_id: str
    sources: str
    session_id: str
    agent_id: str
    count: int
    first_ns: int
    last_ns: int
    entry_id: int
    last_entry_id: int
    resolved_ns: int = 0
    resolved_entry_id: int = 0
    rank_key: float = 0.0
    target_key: str = ""  # what the call aimed at (summarizer.common.failures.target_of)
    cascades: int = 0  # parallel calls cancelled because of it

    @property
    def is_open(self) -> bool:
        return self.resolved_entry_id < self.last_entry_id


@dataclass(slots=True)
class ConstraintRow:
    id: str
    description: str
    source: str
    feature_id: str
    session_id: str
    active: int
    negative: int
    head: str  # the rule's head terms joined by " "
    object: str  # the rule's object terms joined by " "
    created_ns: int
    last_ns: int
    revoked_ns: int
    entry_id: int
    last_entry_id: int


TABLES: dict[str, tuple[type[Any], str]] = {
    "mem_decisions": (DecisionRow, "id"),
    "mem_failures": (FailureRow, "signature"),
    "mem_constraints": (ConstraintRow, "id"),
}


# Columns added after a table's first release: (table, column, declaration). A table written
# by an earlier ctxd gains them when a writer opens the memory (store.ensure_schema).
ADDED_COLUMNS = (
    ("mem_failures", "target_key", "TEXT NOT NULL DEFAULT ''"),
    ("mem_failures", "cascades", "INTEGER NOT NULL DEFAULT 0"),
    ("mem_decisions", "retired_ns", "INTEGER NOT NULL DEFAULT 0"),
    ("mem_decisions", "retired_by", "TEXT NOT NULL DEFAULT ''"),
)
ADDED_INDEXES = ("CREATE INDEX IF NOT EXISTS mem_failures_target ON mem_failures(target_key)",)


def columns(row_type: type[Any]) -> list[str]:
    """Column names of a row dataclass, in table order."""
    return [f.name for f in fields(row_type)]


def add_missing_columns(conn: sqlite3.Connection) -> None:
    """Give tables written by an earlier ctxd the columns added since (inside a transaction)."""
    for table, column, declaration in ADDED_COLUMNS:
        if column not in _present(conn, table):
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
    for statement in ADDED_INDEXES:
        conn.execute(statement)


def select_list(conn: sqlite3.Connection, row_type: type[Any], table: str) -> str:
    """The SELECT list of a row dataclass; a column an older table lacks reads as its default
    (a reader may open an index no writer has migrated yet)."""
    present = _present(conn, table)
    out = []
    for f in fields(row_type):
        if f.name in present:
            out.append(f.name)
        else:
            default = f.default if f.default is not MISSING else ""
            out.append(f"{default!r} AS {f.name}" if isinstance(default, str) else
                       f"{default} AS {f.name}")  # fmt: skip
    return ", ".join(out)


def has_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    """Whether a table has a column (a reader may open an index no writer has migrated)."""
    return column in _present(conn, table)


def _present(conn: sqlite3.Connection, table: str) -> set[str]:
    return {str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})")}
