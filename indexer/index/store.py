"""SQLite index: opening it, the one-transaction batch commit (I3), and read queries."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from indexer.errors import IndexCorruptError
from indexer.index.file import open_index
from indexer.index.rows import INSERT_ENTRY, entry_row
from indexer.index.schema import SCHEMA_VERSION, upgrade
from indexer.locks import lock_is_held
from indexer.models import Entry
from indexer.paths import StatePaths
from indexer.search import index as search_index
from indexer.spool.tailer import FileState

# The writer's SQLite page cache, in KiB. 16 MB holds the hot pages of the unique indexes (random
# keys) of a large index; at 32 MB a bulk catch-up took the daemon's peak RSS over 100 MB, for no
# throughput difference measurable (bench_ingest.py --cache-kib) through this machine's noise.
WRITER_CACHE_KIB = 16384
_CREATION_WAIT_S = 10.0  # how long a reader waits for a new index's schema to be committed

ENTRY_COLUMNS = (
    "id, file_id, offset, line_no, ts_ns, pid, session_id, hook_event, event, agent_id,"
    " agent_type, cc_agent_id, tool_name, tool_use_id, description, instruction,"
    " output_summary, error, files, text, cwd, detail"
)
_files_decoder = msgspec.json.Decoder(tuple[str, ...])


# A Struct rather than a frozen dataclass: one is made per stored entry, and a frozen
# dataclass's __init__ cost ~0.8 µs each (a Struct's ~0.1 µs).
class StoredEntry(msgspec.Struct, frozen=True, gc=False):
    """An entry read back from the index, with its id (the `seq` of views)."""

    id: int
    entry: Entry


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open the index (creating it unless `readonly`), WAL mode, schema checked."""
    try:
        try:
            conn = open_index(path, readonly=readonly, check_same_thread=readonly)
        except FileNotFoundError:  # only when readonly: reported as SQLite reports it
            raise sqlite3.OperationalError("unable to open database file") from None
        conn.execute("PRAGMA busy_timeout=10000")
        if not readonly:
            conn.execute("PRAGMA journal_mode=WAL")
            # NORMAL survives kill -9 (the crash the daemon must survive); FULL would add an
            # fsync per commit for power-loss durability of the last transactions only.
            conn.execute("PRAGMA synchronous=NORMAL")
            # Checkpoint the WAL every ~16 MB rather than every 4 MB: a bulk catch-up then
            # spends far fewer fsyncs; readers never wait either way (WAL).
            conn.execute("PRAGMA wal_autocheckpoint=4000")
            # A larger page cache than the 2 MB default keeps the unique indexes' hot pages.
            conn.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
            upgrade(conn)
            search_index.ensure(conn)  # an older index gains its search index (backfilled)
        else:
            _check_version(conn, path)
    except sqlite3.DatabaseError as e:
        raise IndexCorruptError(
            f"{path}: cannot open the index ({e}); move it aside and run `ctxd rebuild`"
        ) from e
    return conn


def _check_version(conn: sqlite3.Connection, path: Path) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    # A new index.db exists, empty, from the moment its creator opens it until the creator's
    # schema transaction commits. The creator holds the writer lock all along: a reader that
    # comes in between waits for the schema instead of failing (first use, many processes).
    deadline = time.monotonic() + _CREATION_WAIT_S
    while version == 0 and time.monotonic() < deadline and _writer_active(path):
        time.sleep(0.01)
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version != SCHEMA_VERSION:
        raise IndexCorruptError(
            f"{path}: schema version {version}, expected {SCHEMA_VERSION}; run `ctxd rebuild`"
        )


def _writer_active(index_db: Path) -> bool:
    try:
        return lock_is_held(str(StatePaths(index_db.parent).lock))
    except OSError:
        return False


# --- meta -------------------------------------------------------------------------------


def get_meta(conn: sqlite3.Connection, key: str, default: str = "") -> str:
    row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return str(row[0]) if row else default


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))


def bump_counter(conn: sqlite3.Connection, key: str, by: int = 1) -> None:
    set_meta(conn, key, str(int(get_meta(conn, key, "0") or 0) + by))


# --- files (offsets) ----------------------------------------------------------------------


def active_files(conn: sqlite3.Connection) -> dict[str, FileState]:
    """The current generation of every spool file, by segment name."""
    rows = conn.execute(
        "SELECT file_id, name, dev, ino, head_len, head_hash, offset, marker, line_no,"
        " partial_since, partial_size FROM files WHERE active=1"
    ).fetchall()
    return {r[1]: FileState(*r) for r in rows}


def new_file(
    conn: sqlite3.Connection, name: str, dev: int, ino: int, reason: str, now_ns: int
) -> FileState:
    """Start a new generation of `name` at offset 0, retiring the previous one."""
    conn.execute("UPDATE files SET active=0 WHERE name=? AND active=1", (name,))
    cur = conn.execute(
        "INSERT INTO files(name, dev, ino, head_len, head_hash, offset, marker, line_no,"
        " created_ns, reason) VALUES (?,?,?,0,x'',0,x'',0,?,?)",
        (name, dev, ino, now_ns, reason),
    )
    file_id = cur.lastrowid
    assert file_id is not None
    return FileState(file_id, name, dev, ino, 0, b"", 0, b"", 0)


def save_file(conn: sqlite3.Connection, state: FileState) -> None:
    conn.execute(
        "UPDATE files SET head_len=?, head_hash=?, offset=?, marker=?, line_no=?,"
        " partial_since=?, partial_size=? WHERE file_id=?",
        (
            state.head_len,
            state.head_hash,
            state.offset,
            state.marker,
            state.line_no,
            state.partial_since,
            state.partial_size,
            state.file_id,
        ),
    )


def retire_file(conn: sqlite3.Connection, file_id: int) -> None:
    conn.execute("UPDATE files SET active=0 WHERE file_id=?", (file_id,))


# --- entries ------------------------------------------------------------------------------


_Refused = Callable[[Entry, Exception], None]


def insert_entries(
    conn: sqlite3.Connection,
    entries: Sequence[Entry],
    on_unstorable: _Refused | None = None,
) -> list[StoredEntry]:
    """Insert entries, skipping duplicates (I3); return the ones stored, with their ids.

    One executemany per batch, then one statement indexes the new rows for search. New rows
    get ids above the previous maximum: when every row was new, in order, one each; else (a
    duplicate skipped) they are read back in one query. An entry SQLite cannot take (a bug
    upstream) raises, or goes to `on_unstorable` while the rest is stored one by one:
    executemany stops at its row, so no savepoint (it doubled the bytes written).
    """
    if not entries:
        return []
    before = max_entry_id(conn)
    try:
        added = conn.executemany(INSERT_ENTRY, map(entry_row, entries)).rowcount
    except sqlite3.Error:
        raise
    except Exception:
        if on_unstorable is None:
            raise
        _insert_rest(conn, entries, before, on_unstorable)
        added = -1
    search_index.index_entries_after(conn, before)
    if added == len(entries):
        # A rowid table without AUTOINCREMENT gives a new row the largest id + 1, and the one
        # writer (I8) inserts nothing in between: no read-back of ids and keys is needed.
        return [StoredEntry(i, e) for i, e in enumerate(entries, before + 1)]
    stored = conn.execute(
        "SELECT id, ts_ns, pid FROM entries WHERE id>? ORDER BY id", (before,)
    ).fetchall()
    by_key: dict[tuple[int, int], Entry] = {}
    for e in entries:
        by_key.setdefault((e.ts_ns, e.pid), e)  # OR IGNORE keeps the first of equal keys
    return [StoredEntry(row[0], by_key[(row[1], row[2])]) for row in stored]


def _insert_rest(
    conn: sqlite3.Connection, entries: Sequence[Entry], before: int, on_unstorable: _Refused
) -> None:
    """After a failed batch insert: insert one by one each entry not stored yet."""
    rows = conn.execute("SELECT ts_ns, pid FROM entries WHERE id>?", (before,))
    done = {(int(r[0]), int(r[1])) for r in rows}
    for e in (e for e in entries if (e.ts_ns, e.pid) not in done):
        try:
            conn.execute(INSERT_ENTRY, entry_row(e))
        except sqlite3.Error:
            raise
        except Exception as err:
            on_unstorable(e, err)


def row_to_entry(row: Sequence[Any]) -> StoredEntry:
    """Turn an `ENTRY_COLUMNS` row into a StoredEntry."""
    files = row[18]
    entry = Entry(
        file_id=int(row[1]),
        offset=int(row[2]),
        line_no=int(row[3]),
        ts_ns=int(row[4]),
        pid=int(row[5]),
        session_id=str(row[6]),
        hook_event=str(row[7]),
        event=str(row[8]),
        agent_id=str(row[9]),
        agent_type=str(row[10]),
        cc_agent_id=str(row[11]),
        tool_name=str(row[12]),
        tool_use_id=str(row[13]),
        description=str(row[14]),
        instruction=str(row[15]),
        output_summary=str(row[16]),
        error=str(row[17]),
        files=_files_decoder.decode(files) if files else (),
        text=str(row[19]),
        cwd=str(row[20]),
        detail=msgspec.Raw(bytes(row[21])),
    )
    return StoredEntry(int(row[0]), entry)


def entries_after(conn: sqlite3.Connection, after_id: int, limit: int = 10000) -> list[StoredEntry]:
    """Entries with id > after_id, oldest first (the summarizer's and views' watermark read)."""
    rows = conn.execute(
        f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id>? ORDER BY id LIMIT ?", (after_id, limit)
    ).fetchall()
    return [row_to_entry(r) for r in rows]


def entries_by_id(conn: sqlite3.Connection, ids: Sequence[int]) -> list[StoredEntry]:
    """The entries with these ids (ascending), oldest first."""
    found: list[StoredEntry] = []
    for at in range(0, len(ids), 500):  # well under SQLite's limit of bound values
        chunk = ids[at : at + 500]
        sql = f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id IN ({','.join('?' * len(chunk))})"
        found += [row_to_entry(r) for r in conn.execute(sql + " ORDER BY id", chunk)]
    return found


def agent_entries(
    conn: sqlite3.Connection, session_id: str, agent_id: str, after_id: int = 0
) -> Iterator[StoredEntry]:
    """One agent's entries in one session, in event-time order."""
    cur = conn.execute(
        f"SELECT {ENTRY_COLUMNS} FROM entries WHERE session_id=? AND agent_id=? AND id>?"
        " ORDER BY ts_ns, pid",
        (session_id, agent_id, after_id),
    )
    for row in cur:
        yield row_to_entry(row)


def max_entry_id(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT coalesce(max(id), 0) FROM entries").fetchone()[0])


def insert_quarantine(
    conn: sqlite3.Connection,
    file_id: int,
    name: str,
    offset: int,
    line_no: int,
    error: str,
    raw: bytes,
    now_ns: int,
) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO quarantine(file_id, name, offset, line_no, error, raw, ts_ns)"
        " VALUES (?,?,?,?,?,?,?)",
        (file_id, name, offset, line_no, error[:500], raw, now_ns),
    )


def count(conn: sqlite3.Connection, table: str) -> int:
    """Row count of one of the index's own tables."""
    assert table in {"entries", "sessions", "agents", "quarantine", "files"}
    return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
