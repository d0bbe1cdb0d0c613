"""The index's SQLite schema, and how an older index is brought up to it when a writer opens it."""

from __future__ import annotations

import sqlite3

from indexer.errors import IndexCorruptError
from indexer.index.catalog import ensure_host_column
from indexer.index.keys import TOOL_INDEX, replace_old_tool_index
from indexer.index.transactions import transaction

SCHEMA_VERSION = 1
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files(
    file_id INTEGER PRIMARY KEY, name TEXT NOT NULL, dev INTEGER NOT NULL, ino INTEGER NOT NULL,
    head_len INTEGER NOT NULL, head_hash BLOB NOT NULL, offset INTEGER NOT NULL,
    marker BLOB NOT NULL, line_no INTEGER NOT NULL, partial_since REAL NOT NULL DEFAULT 0,
    partial_size INTEGER NOT NULL DEFAULT 0, active INTEGER NOT NULL DEFAULT 1,
    created_ns INTEGER NOT NULL, reason TEXT NOT NULL DEFAULT 'new');
CREATE INDEX IF NOT EXISTS files_name ON files(name, active);
CREATE TABLE IF NOT EXISTS entries(
    id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL, offset INTEGER NOT NULL,
    line_no INTEGER NOT NULL, ts_ns INTEGER NOT NULL, pid INTEGER NOT NULL,
    tool_key INTEGER, session_id TEXT NOT NULL, hook_event TEXT NOT NULL, event TEXT NOT NULL,
    agent_id TEXT NOT NULL, agent_type TEXT NOT NULL, cc_agent_id TEXT NOT NULL,
    tool_name TEXT NOT NULL, tool_use_id TEXT NOT NULL, description TEXT NOT NULL,
    instruction TEXT NOT NULL, output_summary TEXT NOT NULL, error TEXT NOT NULL,
    files TEXT NOT NULL, text TEXT NOT NULL, cwd TEXT NOT NULL, detail BLOB NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS entries_event ON entries(ts_ns, pid);
{TOOL_INDEX};
CREATE INDEX IF NOT EXISTS entries_agent ON entries(session_id, agent_id, id);
CREATE TABLE IF NOT EXISTS sessions(
    session_id TEXT PRIMARY KEY, first_ns INTEGER NOT NULL, last_ns INTEGER NOT NULL,
    cwd TEXT NOT NULL DEFAULT '', title TEXT NOT NULL DEFAULT '',
    first_prompt TEXT NOT NULL DEFAULT '', events INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL DEFAULT 'active',
    end_reason TEXT NOT NULL DEFAULT '', compactions INTEGER NOT NULL DEFAULT 0,
    host TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS agents(
    session_id TEXT NOT NULL, agent_id TEXT NOT NULL, agent_type TEXT NOT NULL,
    cc_agent_id TEXT NOT NULL DEFAULT '', tool_use_id TEXT NOT NULL DEFAULT '',
    explicit INTEGER NOT NULL DEFAULT 0, started_ns INTEGER NOT NULL, last_ns INTEGER NOT NULL,
    completed_ns INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL DEFAULT 'running',
    description TEXT NOT NULL DEFAULT '', PRIMARY KEY(session_id, agent_id));
CREATE INDEX IF NOT EXISTS agents_by_id ON agents(agent_id, last_ns);
CREATE TABLE IF NOT EXISTS agent_aliases(
    session_id TEXT NOT NULL, alias TEXT NOT NULL, agent_id TEXT NOT NULL,
    PRIMARY KEY(session_id, alias));
CREATE TABLE IF NOT EXISTS quarantine(
    id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL, name TEXT NOT NULL,
    offset INTEGER NOT NULL, line_no INTEGER NOT NULL, error TEXT NOT NULL,
    raw BLOB NOT NULL, ts_ns INTEGER NOT NULL, UNIQUE(file_id, offset));
CREATE TABLE IF NOT EXISTS dirty_views(session_id TEXT NOT NULL, view TEXT NOT NULL,
    PRIMARY KEY(session_id, view));
"""
# Added since schema version 1 was first released: made in an older index when a writer opens
# it. New columns get defaults (0: not known, for rows written before they existed).
_LATER_TABLES = (
    "CREATE TABLE IF NOT EXISTS unsorted_views(folder TEXT NOT NULL, file TEXT NOT NULL,"
    " since_ns INTEGER NOT NULL, PRIMARY KEY(folder, file))",
    # The Agent calls of a session, read by attribution when it loads the session: few rows.
    "CREATE INDEX IF NOT EXISTS entries_agent_calls ON entries(session_id, tool_use_id)"
    " WHERE event IN ('agent_start','agent_complete','agent_launched','agent_failed')",
    # Every deletion of entries (indexer.retention.purge.log_purge), for a consumer that copies the
    # index elsewhere (the team store). AUTOINCREMENT: a sequence number is never reused, even
    # once the rows below it are trimmed. `max_entry_id` is the largest entry id left after the
    # deletion: ids above it may be given again to new entries (a rowid table reuses the ids
    # of deleted top rows).
    "CREATE TABLE IF NOT EXISTS purge_log(seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " kind TEXT NOT NULL, session_id TEXT NOT NULL, before_ns INTEGER NOT NULL,"
    " max_entry_id INTEGER NOT NULL, ts_ns INTEGER NOT NULL)",
    # A random id per index file: a consumer that copies entries elsewhere by id (the team
    # store) tells a rebuilt or replaced index, whose ids start again at 1, from its source.
    "INSERT OR IGNORE INTO meta(key, value) VALUES ('index_id', lower(hex(randomblob(16))))",
)
_LATER_COLUMNS = {"sessions": ("first_prompt_ns", "status_ns")}


def upgrade(conn: sqlite3.Connection) -> None:
    """Create the schema in a new index, or bring an older one up to this ctxd's (a writer
    calls this when it opens the index); refuse a schema newer than this ctxd knows."""
    _migrate(conn)
    _add_later_schema(conn)
    replace_old_tool_index(conn)  # an index from an older ctxd
    ensure_host_column(conn)  # likewise


def _migrate(conn: sqlite3.Connection) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise IndexCorruptError(
            f"index schema version {version} is newer than this ctxd ({SCHEMA_VERSION}); "
            "upgrade ctxd or run `ctxd rebuild`"
        )
    if version < SCHEMA_VERSION:
        with transaction(conn):
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")


def _add_later_schema(conn: sqlite3.Connection) -> None:
    for statement in _LATER_TABLES:
        conn.execute(statement)
    for table, columns in _LATER_COLUMNS.items():
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        for column in columns:
            if column not in have:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} INTEGER NOT NULL DEFAULT 0")
