"""The dedupe key of tool events (I3) and the unique index that enforces it."""

from __future__ import annotations

import hashlib
import logging
import sqlite3

from indexer.models import Entry

# Led by the session: a batch's keys then share a few index pages instead of one random page
# each. Indexed alone, the random keys cost a written page per insert once the index outgrew the
# page cache (2.8 -> 5.2 kB of writes per entry between 50k and 200k entries).
TOOL_INDEX = (
    "CREATE UNIQUE INDEX IF NOT EXISTS entries_session_tool ON entries(session_id, tool_key)"
    " WHERE tool_key IS NOT NULL"
)
_OLD_TOOL_INDEX = "entries_tool"  # (tool_key) alone, in indexes written before 2026-11-25
log = logging.getLogger("ctxd.store")


def tool_key(e: Entry) -> int | None:
    """The dedupe key of a tool event: (session_id, tool_use_id, hook_event), a 64-bit hash.

    Claude Code may deliver the same tool event twice (parallel hooks, retries); an integer key
    keeps the unique index small and fast. A collision of 64-bit hashes is not a practical risk
    (and the index compares keys within one session only).
    """
    if not e.tool_use_id:
        return None
    raw = f"{e.session_id}\x00{e.tool_use_id}\x00{e.hook_event}".encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big", signed=True)


def replace_old_tool_index(conn: sqlite3.Connection) -> bool:
    """Give an index written by an older ctxd the current dedupe index; True if it did.

    One transaction, the new unique index built before the old one is dropped: no duplicate can
    slip in between, and a kill leaves either index in place. The caller holds the writer lock.
    """
    sql = "SELECT 1 FROM sqlite_master WHERE type='index' AND name=?"
    if not conn.execute(sql, (_OLD_TOOL_INDEX,)).fetchone():
        return False
    log.info("building the index's new dedupe key for tool events (once, for an older index)")
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(TOOL_INDEX)
        conn.execute(f"DROP INDEX {_OLD_TOOL_INDEX}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return True
