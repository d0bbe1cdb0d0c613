"""sqlite3's errors leave the index API as ctxd's own, each with a message that says what to do."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from indexer.errors import (
    CtxdError,
    IndexAccessError,
    IndexBusyError,
    IndexCorruptError,
    IndexLockedError,
    IndexUnavailableError,
    translate_sqlite_errors,
)
from indexer.paths import StatePaths
from indexer.queries import history, query
from indexer.writer.catch_up import catch_up


@pytest.fixture
def index_db(tmp_path: Path) -> Path:
    paths = StatePaths(tmp_path / "state")
    paths.root.mkdir(mode=0o700)
    catch_up(paths)  # an empty, valid index
    assert paths.index_db.exists()
    return paths.index_db


def test_a_locked_index_gives_index_locked(index_db: Path) -> None:
    holder = sqlite3.connect(index_db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the write lock
    waiter = sqlite3.connect(index_db, isolation_level=None, timeout=0)
    try:
        with pytest.raises(IndexLockedError) as info, history.transaction(waiter):
            history.set_meta(waiter, "k", "v")
        assert "locked by another process" in str(info.value)
        assert "ctxd stop" in str(info.value)
        assert isinstance(info.value.__cause__, sqlite3.OperationalError)
        # Not the writer-lock error: callers that then ask the daemon must not see it.
        assert not isinstance(info.value, IndexBusyError)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        waiter.close()
    with history.transaction(waiter := sqlite3.connect(index_db, isolation_level=None)):
        history.set_meta(waiter, "k", "v")  # the lock is gone: the same call works
    waiter.close()


def test_a_corrupt_file_gives_index_corrupt(tmp_path: Path) -> None:
    bad = tmp_path / "index.db"
    bad.write_bytes(b"this is not a database\n" * 512)
    conn = sqlite3.connect(bad)
    try:
        with pytest.raises(IndexCorruptError) as info:
            query.session_rows(conn)
        assert "damaged" in str(info.value) and "ctxd rebuild" in str(info.value)
    finally:
        conn.close()
    with pytest.raises(IndexCorruptError, match="ctxd rebuild"):
        history.connect(bad, readonly=True)


def test_a_missing_file_gives_index_unavailable(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "index.db"
    with pytest.raises(IndexUnavailableError) as info:
        query.open_index(missing)
    assert str(missing) in str(info.value) and "ctxd ingest" in str(info.value)
    with pytest.raises(IndexUnavailableError):
        history.connect(missing, readonly=True)
    with pytest.raises(IndexUnavailableError) as info, translate_sqlite_errors(str(missing)):
        sqlite3.connect(f"file:{missing}?mode=ro", uri=True)
    assert str(missing) in str(info.value)


def test_every_translation_is_a_ctxd_error_and_other_errors_pass_through() -> None:
    with pytest.raises(IndexAccessError) as info, translate_sqlite_errors("q"):
        raise sqlite3.ProgrammingError("something odd")
    assert isinstance(info.value, CtxdError) and "ctxd doctor" in str(info.value)
    with pytest.raises(ValueError), translate_sqlite_errors("q"):
        raise ValueError("not sqlite's")
    calls = []

    @translate_sqlite_errors("decorated")
    def f() -> None:
        calls.append(1)
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(IndexLockedError, match=r"^decorated: "):
        f()
    assert calls == [1]


def test_the_error_module_does_not_load_sqlite3() -> None:
    # indexer.errors is imported by the hook (via indexer.paths): it must not load sqlite3.
    code = "import sys, indexer.errors, indexer.paths; print('sqlite3' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
