"""Views in event-time order: out-of-order views noted durably, their tails rewritten once a pass.

A view lists its entries by (ts_ns, pid), the order the events happened in. The writer appends
in id order, which is that order except for an event stored after later ones: a transcript
imported after the hooks captured the rest of its session, or two hooks that raced for the
spool. Rewriting the view for every such batch would make a backfill quadratic, so the view
is noted in `unsorted_views` (with the earliest time it must be ordered from) in the same
transaction that moves `views_upto`, and `sort_views` puts every noted view in order at the
end of the pass: it cuts the view before its first line at that time or later and writes the
tail again from the index. A kill mid-way leaves the note, and the next writer redoes it; the
tail comes from the index, not from the file, so what the kill left of it does not matter.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from indexer.index import store
from indexer.index.store import ENTRY_COLUMNS, StoredEntry, row_to_entry
from indexer.views.entry_lines import INSTRUCTION_EVENTS, encode_line, iso_utc, view_keys
from indexer.views.writer import ViewWriter

__all__ = ["note", "pending", "sort_views", "sorted_entries"]

_PAGE = 5000  # entries read from the index at a time
_FLUSH_BYTES = 1 << 20  # a view's lines are written once this many are waiting
_INSTRUCTIONS = ",".join(f"'{e}'" for e in sorted(INSTRUCTION_EVENTS))


def note(conn: sqlite3.Connection, unsorted: dict[tuple[str, str], int]) -> None:
    """Store the views found out of order (in the caller's transaction), keeping the earliest
    time of each."""
    conn.executemany(
        "INSERT INTO unsorted_views(folder, file, since_ns) VALUES (?,?,?) ON CONFLICT(folder,"
        " file) DO UPDATE SET since_ns=min(since_ns, excluded.since_ns)",
        [(folder, file, since) for (folder, file), since in unsorted.items()],
    )


def pending(conn: sqlite3.Connection) -> bool:
    """True if some view waits to be put in order."""
    return conn.execute("SELECT 1 FROM unsorted_views LIMIT 1").fetchone() is not None


def sort_views(conn: sqlite3.Connection, writer: ViewWriter) -> int:
    """Put every noted view in order, then clear the notes; return lines written.

    Call in a transaction, with every view written up to `views_upto` (at the end of a pass).
    """
    notes = conn.execute("SELECT folder, file, since_ns FROM unsorted_views").fetchall()
    if not notes:
        return 0
    upto = int(store.get_meta(conn, "views_upto", "0") or 0)
    by_folder: dict[str, dict[tuple[str, str], int]] = {}
    for folder, file, since in notes:
        by_folder.setdefault(folder, {})[(folder, file)] = since_ms(since)
    written = 0
    for folder, views in sorted(by_folder.items()):
        written += _sort_folder(conn, writer, folder, views, upto)
    conn.execute("DELETE FROM unsorted_views")
    return written


def since_ms(ts_ns: int) -> int:
    """The start of the millisecond of `ts_ns`: view lines are stamped to the millisecond."""
    return ts_ns - ts_ns % 1_000_000


def _sort_folder(
    conn: sqlite3.Connection,
    writer: ViewWriter,
    folder: str,
    views: dict[tuple[str, str], int],
    upto: int,
) -> int:
    """Rewrite the tails of one folder's noted views (a session's, or the project-wide one)."""
    views = {name: since for name, since in views.items() if writer.cut_tail(name, iso_utc(since))}
    if not views:
        return 0
    waiting: dict[tuple[str, str], list[bytes]] = {name: [] for name in views}
    sizes = dict.fromkeys(views, 0)
    written = 0
    for se in _tail_entries(conn, folder, min(views.values()), upto):
        line = b""
        for name in view_keys(se.entry):
            since = views.get(name)
            if since is None or se.entry.ts_ns < since:
                continue
            line = line or encode_line(se)
            waiting[name].append(line)
            sizes[name] += len(line)
            written += 1
            if sizes[name] >= _FLUSH_BYTES:
                writer.write_lines(name, b"".join(waiting[name]))
                waiting[name], sizes[name] = [], 0
    for name, lines in waiting.items():
        if lines:
            writer.write_lines(name, b"".join(lines))
        writer.drop_if_empty(name)
    return written


def _tail_entries(
    conn: sqlite3.Connection, folder: str, since: int, upto: int
) -> Iterator[StoredEntry]:
    """The folder's entries at `since` or later (ids up to `upto`), in event-time order."""
    if folder:
        where, args = "session_id=? AND ts_ns>=?", [folder, since]
    else:  # the project-wide instruction view
        where, args = f"ts_ns>=? AND event IN ({_INSTRUCTIONS})", [since]
    # `+id`: the id bound must not steer SQLite away from the ts_ns or session index.
    yield from _paged(conn, f"{where} AND +id<=?", [*args, upto])


def sorted_entries(conn: sqlite3.Connection) -> Iterator[StoredEntry]:
    """Every entry in event-time order, read a page at a time (a full rebuild of the views)."""
    yield from _paged(conn, "1", [])


def _paged(conn: sqlite3.Connection, where: str, args: list[object]) -> Iterator[StoredEntry]:
    """Entries matching `where`, by (ts_ns, pid) (unique), a page at a time."""
    after: tuple[int, int] = (-(2**63), 0)
    while True:
        rows = conn.execute(
            f"SELECT {ENTRY_COLUMNS} FROM entries WHERE {where} AND (ts_ns, pid) > (?, ?)"
            " ORDER BY ts_ns, pid LIMIT ?",
            [*args, *after, _PAGE],
        ).fetchall()
        for row in rows:
            yield row_to_entry(row)
        if len(rows) < _PAGE:
            return
        last = rows[-1]
        after = (int(last[4]), int(last[5]))
