"""Per-session, per-agent JSONL views (seed 000 §3.5), appended after commits, rebuildable.

Each view line carries `seq`, the entry's id in the index. A view is caught up by reading the
`seq` of its last complete line and appending only later entries, so a crash between an append
and the index's bookkeeping never writes a line twice; a torn last line is cut off first.
A view lists its entries in event-time order: one given an older event than its newest is put
back in order at the end of the pass (indexer.views.order).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from indexer.index import store
from indexer.index.store import StoredEntry
from indexer.index.transactions import transaction
from indexer.paths import StatePaths
from indexer.views import order as view_order
from indexer.views import rebuild as view_rebuild
from indexer.views.entry_lines import (
    AGENT_INSTRUCTIONS,
    ALL_AGENT_INSTRUCTIONS,
    iso_utc,
    view_files,
)
from indexer.views.writer import ViewWriter, append_after

__all__ = [
    "AGENT_INSTRUCTIONS",
    "ALL_AGENT_INSTRUCTIONS",
    "ViewWriter",
    "append_after",
    "catch_up",
    "iso_utc",
    "rebuild_all",
    "sort_pending",
    "view_files",
]


def catch_up(
    conn: sqlite3.Connection, writer: ViewWriter, known: Sequence[StoredEntry] = ()
) -> int:
    """Bring every view up to date with the index; return lines written.

    `known` may hold the entries just inserted (ascending ids): when they are exactly the ones
    the views lack, they are appended without reading them back. After a re-attribution, only
    the known entries of the re-attributed agents are read again (a relink may have moved them
    after they were stored); a rebuilt view already holds its share, which its last `seq` skips.
    """
    if view_rebuild.pending(conn):
        # A rebuild was requested and not finished (killed?): finish it before anything else.
        writer.forget()
        return view_rebuild.rebuild(conn, writer.paths)
    written = 0
    dirty = conn.execute("SELECT session_id, view FROM dirty_views").fetchall()
    for session_id, view in dirty:
        writer.rebuild(conn, session_id, view)
        conn.execute("DELETE FROM dirty_views WHERE session_id=? AND view=?", (session_id, view))
    upto = int(store.get_meta(conn, "views_upto", "0") or 0)
    if known and known[0].id == upto + 1 and known[-1].id == store.max_entry_id(conn):
        written += writer.append(_as_stored(conn, known, set(dirty)) if dirty else known)
        upto = known[-1].id
    more, upto = append_after(conn, writer, upto)
    store.set_meta(conn, "views_upto", str(upto))
    unsorted = writer.take_unsorted()
    if unsorted:  # with the watermark: a kill after the appends cannot lose the note
        view_order.note(conn, unsorted)
    return written + more


def sort_pending(conn: sqlite3.Connection, writer: ViewWriter) -> int:
    """Put the views noted out of order back in event-time order (call at the end of a pass,
    outside a transaction); return lines written."""
    if not view_order.pending(conn):
        return 0
    with transaction(conn):
        return view_order.sort_views(conn, writer)


def _as_stored(
    conn: sqlite3.Connection, known: Sequence[StoredEntry], moved: set[tuple[str, str]]
) -> Sequence[StoredEntry]:
    """`known` with its entries of the (session, agent) pairs in `moved` read from the index."""
    ids = [se.id for se in known if (se.entry.session_id, se.entry.agent_id) in moved]
    if not ids:
        return known
    stored = {se.id: se for se in store.entries_by_id(conn, ids)}
    return [stored.get(se.id, se) for se in known]


def rebuild_all(conn: sqlite3.Connection, paths: StatePaths) -> int:
    """Regenerate every view from the index (`ctxd rebuild`); safe to kill at any point.

    Commits the rebuild request in its own transaction first: the caller must not be inside
    one. A killed rebuild is finished by the next writer (see `catch_up`).
    """
    with transaction(conn):
        view_rebuild.request(conn)
    with transaction(conn):
        return view_rebuild.rebuild(conn, paths)
