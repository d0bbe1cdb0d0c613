"""The index's read API for the summarizer: named queries over sessions, agents, meta and files.

Every function takes a connection (from `open_index`, `indexer.index.store.connect` or the
writer) and returns plain tuples or values; sqlite3's errors leave as ctxd's own
(`IndexLockedError`, `IndexCorruptError`, `IndexUnavailableError`, see `indexer.errors`).
Only sqlite3 is imported, so the light paths (`ctxd read`, `ctxd status`) stay light;
queries that return whole entries live in `indexer.queries.history`.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from indexer.errors import IndexUnavailableError, translate_sqlite_errors
from indexer.queries import readonly
from indexer.queries.readonly import complete_size, connect_readonly, spool_lag

__all__ = [
    "TODO_FILTER",
    "Connection",
    "active_offsets",
    "agent_counts",
    "agent_table",
    "alias_in_session",
    "clear_handoff_session",
    "complete_size",
    "connect_readonly",
    "count_agent_entries",
    "has_agent",
    "has_history",
    "index_is_current",
    "integrity_problems",
    "last_entry",
    "latest_agent_by_alias",
    "latest_session",
    "latest_session_with_agent",
    "meta_values",
    "newest_activity_ns",
    "open_index",
    "published_if_level",
    "recent_agents",
    "running_agents",
    "session_exists",
    "session_header",
    "session_host",
    "session_ids_active_since",
    "session_ids_before",
    "session_prompts",
    "session_rows",
    "session_stats",
    "session_table",
    "spool_lag",
    "table_counts",
    "table_names",
]

Connection = sqlite3.Connection
_guard = translate_sqlite_errors

# The read-only fast path's checks (`ctxd read`, the inject cache), with errors translated.
index_is_current = _guard("index")(readonly.index_is_current)
latest_session_with_agent = _guard("agents")(readonly.latest_session_with_agent)
count_agent_entries = _guard("entries")(readonly.count_agent_entries)

# Entries that change a session's todo list (TodoWrite, the Task tools, task events).
TODO_FILTER = (
    "(tool_name IN ('TodoWrite','TaskCreate','TaskUpdate')"
    " OR event IN ('task_created','task_completed'))"
)

_SESSION_ROW = (
    "SELECT s.session_id, s.first_ns, s.last_ns, s.cwd, s.title, s.first_prompt, s.events,"
    " s.failures, s.status, s.end_reason, s.compactions,"
    " (SELECT count(*) FROM agents a WHERE a.session_id=s.session_id), {host} FROM sessions s"
)


def open_index(index_db: Path, *, readonly: bool = True) -> sqlite3.Connection:
    """A connection to an existing index; IndexUnavailableError if there is none."""
    if not index_db.exists():
        raise IndexUnavailableError(
            f"{index_db}: no index yet; start a Claude Code session here, then run `ctxd ingest`"
        )
    from indexer.index import store  # the schema check; loaded only by callers that open this way

    return store.connect(index_db, readonly=readonly)


# --- sessions ---------------------------------------------------------------------------------


@_guard("sessions")
def session_rows(
    conn: sqlite3.Connection, *, limit: int | None = None, session_id: str | None = None,
    id_prefix: str | None = None,
) -> list[tuple[Any, ...]]:
    """Catalog rows (id, first_ns, last_ns, cwd, title, first_prompt, events, failures, status,
    end_reason, compactions, agents, host): one session by id (case-insensitive), those whose id
    starts with `id_prefix`, or all, newest start first."""
    # An index no writer of this version opened yet has no host column: its sessions are all
    # Claude Code's.
    columns = {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}
    select = _SESSION_ROW.format(host="s.host" if "host" in columns else "''")
    if session_id is not None:
        return conn.execute(select + " WHERE lower(s.session_id)=?", (session_id,)).fetchall()
    if id_prefix is not None:
        like = id_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        return conn.execute(
            select + " WHERE lower(s.session_id) LIKE ? ESCAPE '\\' ORDER BY s.first_ns DESC",
            (like,),
        ).fetchall()
    sql = select + " ORDER BY s.first_ns DESC, s.session_id"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return conn.execute(sql).fetchall()


@_guard("sessions")
def session_exists(conn: sqlite3.Connection, session_id: str) -> bool:
    """True if the index has a session with exactly this id."""
    row = conn.execute("SELECT 1 FROM sessions WHERE session_id=?", (session_id,)).fetchone()
    return row is not None


@_guard("sessions")
def session_header(conn: sqlite3.Connection, session_id: str) -> tuple[str, str, int, str] | None:
    """(title, first prompt, first_ns, cwd) of a session, or None."""
    row = conn.execute(
        "SELECT title, first_prompt, first_ns, cwd FROM sessions WHERE session_id=?",
        (session_id,),
    ).fetchone()
    return (str(row[0]), str(row[1]), int(row[2]), str(row[3])) if row else None


@_guard("sessions")
def session_host(conn: sqlite3.Connection, session_id: str) -> str:
    """The client a session ran in: "claude" (Claude Code) or "codex"."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}
    if "host" not in columns:  # an index no writer of this version opened yet
        return "claude"
    row = conn.execute("SELECT host FROM sessions WHERE session_id=?", (session_id,)).fetchone()
    return str(row[0]) if row and row[0] else "claude"


@_guard("sessions")
def session_stats(conn: sqlite3.Connection, session_id: str) -> tuple[Any, ...] | None:
    """(title, first_prompt, events, failures, compactions, last_ns, status) of a session."""
    row = conn.execute(
        "SELECT title, first_prompt, events, failures, compactions, last_ns, status"
        " FROM sessions WHERE session_id=?",
        (session_id,),
    ).fetchone()
    return tuple(row) if row else None


@_guard("sessions")
def latest_session(conn: sqlite3.Connection) -> str | None:
    """The session with the most recent activity."""
    row = conn.execute("SELECT session_id FROM sessions ORDER BY last_ns DESC LIMIT 1").fetchone()
    return str(row[0]) if row else None


@_guard("sessions")
def session_ids_active_since(conn: sqlite3.Connection, since_ns: int) -> list[str]:
    """Sessions with activity at or after `since_ns`."""
    rows = conn.execute("SELECT session_id FROM sessions WHERE last_ns>=?", (since_ns,))
    return [str(r[0]) for r in rows]


@_guard("sessions")
def session_ids_before(conn: sqlite3.Connection, before_ns: int) -> list[str]:
    """Sessions whose last activity is older than `before_ns`, sorted by id."""
    rows = conn.execute(
        "SELECT session_id FROM sessions WHERE last_ns<? ORDER BY session_id", (before_ns,)
    )
    return [str(r[0]) for r in rows]


@_guard("sessions")
def clear_handoff_session(conn: sqlite3.Connection, session_id: str, since_ns: int) -> str:
    """The other session that ended with `/clear` most recently (at or after `since_ns`), or ""."""
    row = conn.execute(
        "SELECT session_id FROM sessions WHERE session_id<>? AND status='ended'"
        " AND end_reason='clear' AND last_ns>=? ORDER BY last_ns DESC LIMIT 1",
        (session_id, since_ns),
    ).fetchone()
    return str(row[0]) if row else ""


@_guard("sessions")
def session_table(conn: sqlite3.Connection) -> list[tuple[str, str, int, str]]:
    """(id, title, events, status) of every session, in table order."""
    return conn.execute("SELECT session_id, title, events, status FROM sessions").fetchall()


# --- entries: small facts (whole entries are in indexer.queries.history) -------------------


@_guard("entries")
def has_history(conn: sqlite3.Connection, session_id: str) -> bool:
    """True if the session has any entry besides its SessionStart."""
    row = conn.execute(
        "SELECT 1 FROM entries WHERE session_id=? AND event<>'session_start' LIMIT 1",
        (session_id,),
    ).fetchone()
    return row is not None


@_guard("entries")
def last_entry(conn: sqlite3.Connection, session_id: str) -> tuple[int, str] | None:
    """(id, event) of the session's newest entry, SessionStart aside."""
    row = conn.execute(
        "SELECT id, event FROM entries WHERE session_id=? AND event<>'session_start'"
        " ORDER BY id DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    return (int(row[0]), str(row[1])) if row else None


@_guard("entries")
def newest_activity_ns(conn: sqlite3.Connection, session_id: str) -> int:
    """The time of the session's newest real event (SessionStart, PostCompact, Notification
    aside), 0 if none."""
    row = conn.execute(
        "SELECT max(ts_ns) FROM entries WHERE session_id=?"
        " AND hook_event NOT IN ('SessionStart','PostCompact','Notification')",
        (session_id,),
    ).fetchone()
    return int(row[0] or 0) if row else 0


@_guard("entries")
def session_prompts(conn: sqlite3.Connection, session_id: str, limit: int = 20) -> list[str]:
    """The session's first prompts, oldest first (by event time)."""
    rows = conn.execute(
        "SELECT text FROM entries WHERE session_id=? AND event='prompt'"
        " ORDER BY ts_ns, pid LIMIT ?",
        (session_id, limit),
    )
    return [str(r[0]) for r in rows]


# --- agents -----------------------------------------------------------------------------------


@_guard("agents")
def has_agent(conn: sqlite3.Connection, session_id: str, agent_id: str) -> bool:
    """True if the session has this agent."""
    row = conn.execute(
        "SELECT 1 FROM agents WHERE session_id=? AND agent_id=?", (session_id, agent_id)
    ).fetchone()
    return row is not None


@_guard("agents")
def latest_agent_by_alias(conn: sqlite3.Connection, alias: str) -> tuple[str, str] | None:
    """(session_id, agent_id) of the most recently active agent known by `alias` (lowercase)."""
    row = conn.execute(
        "SELECT a.session_id, a.agent_id FROM agent_aliases a"
        " JOIN agents g ON g.session_id=a.session_id AND g.agent_id=a.agent_id"
        " WHERE lower(a.alias)=? ORDER BY g.last_ns DESC LIMIT 1",
        (alias,),
    ).fetchone()
    return (str(row[0]), str(row[1])) if row else None


@_guard("agents")
def alias_in_session(conn: sqlite3.Connection, session_id: str, alias: str) -> str | None:
    """The agent id the session knows by `alias` (lowercase), or None."""
    row = conn.execute(
        "SELECT agent_id FROM agent_aliases WHERE session_id=? AND lower(alias)=?",
        (session_id, alias),
    ).fetchone()
    return str(row[0]) if row else None


@_guard("agents")
def recent_agents(
    conn: sqlite3.Connection, session_id: str, limit: int
) -> list[tuple[str, str, str, str]]:
    """(agent_id, agent_type, status, description) of the session's latest active agents."""
    return conn.execute(
        "SELECT agent_id, agent_type, status, description FROM agents WHERE session_id=?"
        " ORDER BY last_ns DESC LIMIT ?",
        (session_id, limit),
    ).fetchall()


@_guard("agents")
def running_agents(conn: sqlite3.Connection, session_id: str) -> list[tuple[str, str, str]]:
    """(agent_id, agent_type, description) of up to 5 agents still running, latest first."""
    rows = conn.execute(
        "SELECT agent_id, agent_type, description FROM agents WHERE session_id=?"
        " AND status='running' ORDER BY last_ns DESC LIMIT 5",
        (session_id,),
    )
    return [(str(r[0]), str(r[1]), str(r[2])) for r in rows]


@_guard("agents")
def agent_counts(conn: sqlite3.Connection, session_id: str) -> tuple[int, int]:
    """(agents, completed agents) of a session."""
    total, completed = conn.execute(
        "SELECT count(*), coalesce(sum(status='completed'), 0) FROM agents WHERE session_id=?",
        (session_id,),
    ).fetchone()
    return int(total), int(completed)


@_guard("agents")
def agent_table(conn: sqlite3.Connection) -> list[tuple[str, str, str, str]]:
    """(agent_id, agent_type, status, cc_agent_id) of every agent, oldest start first."""
    return conn.execute(
        "SELECT agent_id, agent_type, status, cc_agent_id FROM agents ORDER BY started_ns"
    ).fetchall()


# --- meta, files, tables ----------------------------------------------------------------------


@_guard("meta")
def meta_values(
    conn: sqlite3.Connection, keys: tuple[str, ...], prefix: str = ""
) -> dict[str, str]:
    """The meta values of `keys` and of every key starting with `prefix` (if given)."""
    marks = ",".join("?" * len(keys)) or "NULL"
    sql = f"SELECT key, value FROM meta WHERE key IN ({marks})"
    args: list[str] = list(keys)
    if prefix:
        sql += " OR substr(key, 1, ?)=?"
        args += [str(len(prefix)), prefix]
    return {str(k): str(v) for k, v in conn.execute(sql, args)}


@_guard("meta")
def published_if_level(conn: sqlite3.Connection) -> int | None:
    """The memory's published watermark if it covers every indexed entry, else None."""
    row = conn.execute("SELECT value FROM meta WHERE key='mem.published'").fetchone()
    published = int(row[0]) if row and row[0] else 0
    top = conn.execute("SELECT coalesce(max(id), 0) FROM entries").fetchone()[0]
    return published if published >= int(top) else None


@_guard("files")
def active_offsets(conn: sqlite3.Connection) -> dict[str, int]:
    """How far each active spool segment is indexed, by segment name."""
    return dict(conn.execute("SELECT name, offset FROM files WHERE active=1").fetchall())


@_guard("index")
def table_counts(conn: sqlite3.Connection, tables: tuple[str, ...]) -> list[int]:
    """The row count of each of `tables` (index tables only: the names are not parameters)."""
    known = table_names(conn)
    for t in tables:
        if t not in known:
            raise ValueError(f"unknown table {t!r}")
    return [int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in tables]


@_guard("index")
def table_names(conn: sqlite3.Connection) -> set[str]:
    """The names of every table and index in the database."""
    return {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master")}


@_guard("index")
def integrity_problems(conn: sqlite3.Connection) -> str:
    """SQLite's quick_check: "" if the file is sound, else its first complaints."""
    rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check(5)").fetchall()]
    return "" if rows == ["ok"] else "; ".join(rows)
