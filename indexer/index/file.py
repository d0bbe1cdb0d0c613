"""Open the index with SQLite: by a quoted URI, and never through a symlink swapped in."""

# SQLite opens the database by name. Checking the name for a symlink first leaves a window in
# which `index.db` or the state directory itself can be swapped for a link, and SQLite would then
# open (and write, and create a WAL beside) a file elsewhere. So the file is first opened here by
# the state directory's fd walk (indexer.safefs, O_NOFOLLOW at every step), SQLite is asked not
# to create anything (`mode=rw`/`mode=ro`: a dangling link cannot make a new file), and the file
# SQLite resolved (`PRAGMA database_list`) must be that same inode, or the connection is closed
# before any statement runs. SQLite itself opens its -wal and -shm files with O_NOFOLLOW.

from __future__ import annotations

import errno
import os
import sqlite3
import stat
from pathlib import Path

from indexer import safefs
from indexer.errors import StateDirError
from indexer.locks import lock_is_held


def open_index(
    index_db: Path, *, readonly: bool, check_same_thread: bool = True
) -> sqlite3.Connection:
    """A connection to `index_db` (created 0600 first unless `readonly`), in autocommit mode.

    Raises FileNotFoundError for a missing index when `readonly`, StateDirError for a symlink
    met before or during the open, sqlite3.DatabaseError for what SQLite refuses.
    """
    safefs.refuse_linked_index(index_db)
    flags = os.O_RDONLY if readonly else os.O_RDWR | os.O_CREAT
    try:
        fd = safefs.open_file(index_db.parent, index_db, flags)
    except OSError as e:
        if e.errno == errno.ELOOP:  # swapped for a link since the check above
            raise _swapped(index_db) from None
        raise
    try:
        expected = os.fstat(fd)
    finally:
        os.close(fd)
    uri = f"{Path(os.path.abspath(index_db)).as_uri()}?mode={'ro' if readonly else 'rw'}"
    try:
        conn = sqlite3.connect(
            uri, uri=True, isolation_level=None, check_same_thread=check_same_thread
        )
    except sqlite3.OperationalError:
        if not _same_file(str(index_db), expected):  # a dangling link swapped in: say so
            raise _swapped(index_db) from None
        raise
    try:
        _check_opened(conn, index_db, expected)  # before any read of the file
        if readonly:
            conn = _readable_without_writing(conn, index_db, uri, check_same_thread)
            _check_opened(conn, index_db, expected)
    except BaseException:
        conn.close()
        raise
    return conn


def _check_opened(conn: sqlite3.Connection, index_db: Path, expected: os.stat_result) -> None:
    """Raise StateDirError unless the file SQLite opened is `expected` (no link swapped in)."""
    conn.text_factory = bytes  # the name as the file system has it, UTF-8 or not
    opened = conn.execute("PRAGMA database_list").fetchone()[2]
    conn.text_factory = str
    if not _same_file(opened, expected):
        raise _swapped(index_db)


def _readable_without_writing(
    conn: sqlite3.Connection, index_db: Path, uri: str, check_same_thread: bool
) -> sqlite3.Connection:
    """`conn`, or one opened `immutable` when SQLite cannot read the index without creating
    or growing the WAL's shared-memory file beside it, which it cannot here (a read-only
    mount, a state dir the reader may only read, a full disk). Only the holder of the writer
    lock writes the index (I8); with that lock free nothing changes the file while it is
    read, so reading it as immutable reads it exactly."""
    try:
        conn.execute("PRAGMA user_version").fetchone()
        return conn
    except sqlite3.OperationalError:
        if lock_is_held(str(index_db.parent / "daemon.lock")):
            raise  # a writer runs: its error is not this one, let the caller report it
        conn.close()
    return sqlite3.connect(
        uri + "&immutable=1", uri=True, isolation_level=None, check_same_thread=check_same_thread
    )


def _same_file(name: str | bytes, expected: os.stat_result) -> bool:
    """True if `name` (the path SQLite resolved and opened) is the regular file `expected`."""
    try:
        st = os.lstat(name)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) == (
        expected.st_dev,
        expected.st_ino,
    )


def _swapped(index_db: Path) -> StateDirError:
    return StateDirError(
        f"{index_db} (or its directory) was replaced by a symlink while being opened: ctxd "
        "never follows a link in its state directory; put the real file in its place and run "
        "the command again"
    )
