"""Read-only index checks and queries that need only sqlite3: the fast path of `ctxd read`.

`ctxd read` is called by orchestrators again and again; importing msgspec and the ingest code
costs more than the read itself. When the index already covers every complete spool line and
the views are level with it, nothing needs catching up (I12 holds) and these plain queries
answer; otherwise the caller falls back to `indexer.writer.catch_up.catch_up`.
"""

from __future__ import annotations

import io
import os
import sqlite3
import stat
from collections.abc import Mapping
from pathlib import Path

from indexer.index.file import open_index

SCHEMA_VERSION = 1  # must equal indexer.index.store.SCHEMA_VERSION (checked by the tests)


def complete_size(path: Path, size: int) -> int:
    """The size of `path` up to and including its last b"\\n" (its complete lines only)."""
    try:
        with _open_nofollow(path) as f:
            pos = size
            while pos > 0:
                start = max(0, pos - 65536)
                f.seek(start)
                i = f.read(pos - start).rfind(b"\n")
                if i >= 0:
                    return start + i + 1
                pos = start
    except OSError:  # deleted by retention meanwhile, or a symlink: nothing to index there
        pass
    return 0


def spool_sizes(spool: Path) -> dict[str, int]:
    """The current size of every spool segment (regular files only: a symlink planted in the
    spool is never a segment, see indexer.safefs)."""
    sizes: dict[str, int] = {}
    try:
        with os.scandir(spool) as it:
            entries = [d for d in it if d.name.endswith(".jsonl")]
    except FileNotFoundError:
        return sizes
    for d in entries:
        # Per file: retention may delete a segment between the listing and its stat; that
        # segment was fully indexed, the others must still be counted.
        try:
            st = d.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        if stat.S_ISREG(st.st_mode):
            sizes[d.name] = st.st_size
    return sizes


def spool_lag(spool: Path, offsets: Mapping[str, int]) -> tuple[int, int]:
    """Bytes and complete lines of the spool past `offsets` (no offsets: the whole spool)."""
    lag_bytes = lag_lines = 0
    for name, size in spool_sizes(spool).items():
        offset = offsets.get(name, 0)
        if size > offset:
            lag_bytes += size - offset
            lag_lines += _count_newlines(spool / name, offset, size)
    return lag_bytes, lag_lines


def unwritable_reason(root: Path) -> str:
    """Why this process cannot write the state dir `root` ("read-only file system", "not
    writable by you", "disk full"), or "" if it can (or if `root` does not exist yet)."""
    try:
        fs = os.statvfs(root)
    except OSError:
        return ""
    if fs.f_flag & os.ST_RDONLY:
        return "read-only file system"
    if not os.access(root, os.W_OK):
        return "not writable by you"
    # Root may still write into the blocks the file system keeps for it (ext4).
    if fs.f_bavail == 0 and (os.geteuid() != 0 or fs.f_bfree == 0):
        return "disk full"
    return ""


def connect_readonly(index_db: Path) -> sqlite3.Connection | None:
    """A read-only connection, or None if there is no index or it has another schema."""
    try:
        conn = open_index(index_db, readonly=True)
    except (FileNotFoundError, sqlite3.DatabaseError):
        return None
    try:
        conn.execute("PRAGMA busy_timeout=10000")
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            conn.close()
            return None
    except sqlite3.DatabaseError:
        conn.close()
        return None
    return conn


def index_is_current(conn: sqlite3.Connection, spool: Path) -> bool:
    """True if every complete spool line is indexed and every view is level with the index
    (and in event-time order)."""
    offsets = dict(conn.execute("SELECT name, offset FROM files WHERE active=1").fetchall())
    for name, size in spool_sizes(spool).items():
        offset = offsets.get(name, 0)
        if size > offset and complete_size(spool / name, size) > offset:
            return False
    max_id = conn.execute("SELECT coalesce(max(id), 0) FROM entries").fetchone()[0]
    row = conn.execute("SELECT value FROM meta WHERE key='views_upto'").fetchone()
    views_upto = int(row[0]) if row and row[0] else 0
    dirty = conn.execute("SELECT count(*) FROM dirty_views").fetchone()[0]
    rebuilding = conn.execute("SELECT 1 FROM meta WHERE key='views_rebuild'").fetchone()
    return bool(
        views_upto == max_id and dirty == 0 and rebuilding is None and not _unsorted_views(conn)
    )


def _unsorted_views(conn: sqlite3.Connection) -> bool:
    """True if a view waits to be put back in event-time order (indexer.views.order)."""
    try:
        return conn.execute("SELECT 1 FROM unsorted_views LIMIT 1").fetchone() is not None
    except sqlite3.OperationalError:  # an index no writer of this version has opened yet
        return False


def latest_session_with_agent(conn: sqlite3.Connection, agent_id: str) -> str | None:
    """The most recently active session that has entries of `agent_id`."""
    if agent_id == "main":
        # Explicit events outside a conversation (`ctxd emit`'s project stream, formerly
        # "ctxd-orchestrator") are not the orchestrator's history.
        row = conn.execute(
            "SELECT session_id FROM entries WHERE agent_id='main' AND session_id NOT IN"
            " ('ctxd-project-notes', 'ctxd-orchestrator') ORDER BY ts_ns DESC, pid DESC LIMIT 1"
        ).fetchone()
    else:
        row = conn.execute(
            "SELECT session_id FROM agents WHERE agent_id=? ORDER BY last_ns DESC LIMIT 1",
            (agent_id,),
        ).fetchone()
    return str(row[0]) if row else None


def count_agent_entries(conn: sqlite3.Connection, session_id: str, agent_id: str) -> int:
    """How many entries one agent has in one session."""
    row = conn.execute(
        "SELECT count(*) FROM entries WHERE session_id=? AND agent_id=?", (session_id, agent_id)
    ).fetchone()
    return int(row[0])


def _count_newlines(path: Path, start: int, end: int) -> int:
    total = 0
    try:
        with _open_nofollow(path) as f:
            f.seek(start)
            remaining = end - start
            while remaining > 0:
                block = f.read(min(1 << 20, remaining))
                if not block:
                    break
                total += block.count(b"\n")
                remaining -= len(block)
    except OSError:
        return 0
    return total


def _open_nofollow(path: Path) -> io.BufferedReader:
    return open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb")
