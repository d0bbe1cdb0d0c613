"""The index is opened by the file the state directory walk found: a symlink swapped in for
index.db or for the state directory between that walk and SQLite's own open is refused, and
nothing outside the state directory is read, created or written."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from indexer.errors import CtxdError, StateDirError
from indexer.index import store
from indexer.queries import readonly


def _tree(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
    }


def _swap_at_open(monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]) -> list[str]:
    """Have `swap` run right before SQLite opens the database (the race being closed)."""
    real_connect = sqlite3.connect
    seen: list[str] = []

    def connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        seen.append(str(database))
        swap()
        monkeypatch.setattr(sqlite3, "connect", real_connect)  # one swap, then as usual
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    return seen


def _state_with_index(tmp_path: Path) -> Path:
    state = tmp_path / "project" / ".ctxd"
    state.mkdir(parents=True, mode=0o700)
    store.connect(state / "index.db").close()
    return state


def _open(state: Path, how: str) -> object:
    if how == "writer":
        return store.connect(state / "index.db")
    if how == "reader":
        return store.connect(state / "index.db", readonly=True)
    return readonly.connect_readonly(state / "index.db")


HOW = ["writer", "reader", "fast reader"]


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("swapped", ["index.db", "state dir"])
def test_a_link_swapped_in_during_the_open_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, swapped: str
) -> None:
    state = _state_with_index(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    # A real index outside: opening it would read it and create its -wal and -shm there.
    shutil.copy(state / "index.db", outside / "index.db")
    before = _tree(outside)

    def swap() -> None:
        if swapped == "index.db":
            os.rename(state / "index.db", tmp_path / "aside.db")
            (state / "index.db").symlink_to(outside / "index.db")
        else:
            os.rename(state, tmp_path / "aside")
            state.symlink_to(outside)

    seen = _swap_at_open(monkeypatch, swap)
    with pytest.raises(StateDirError, match="replaced by a symlink while being opened"):
        _open(state, how)
    assert seen, "SQLite was never asked to open the index"
    assert _tree(outside) == before


@pytest.mark.parametrize("how", HOW)
def test_a_dangling_link_swapped_in_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    state = _state_with_index(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()

    def swap() -> None:
        os.rename(state / "index.db", tmp_path / "aside.db")
        (state / "index.db").symlink_to(outside / "created-by-sqlite.db")

    _swap_at_open(monkeypatch, swap)
    with pytest.raises(CtxdError, match="replaced by a symlink while being opened"):
        _open(state, how)
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("how", HOW)
def test_the_index_opens_as_usual_when_nothing_is_swapped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    state = _state_with_index(tmp_path)
    seen = _swap_at_open(monkeypatch, lambda: None)
    conn = _open(state, how)
    assert isinstance(conn, sqlite3.Connection)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION
    conn.close()
    assert seen and seen[0].startswith("file://")  # a URI: its characters are quoted


def test_a_missing_index_is_no_index_for_the_fast_reader(tmp_path: Path) -> None:
    state = tmp_path / ".ctxd"
    state.mkdir(mode=0o700)
    assert readonly.connect_readonly(state / "index.db") is None
    assert not (state / "index.db").exists()


@pytest.mark.parametrize("how", HOW)
def test_a_state_dir_whose_path_is_not_utf8_opens(tmp_path: Path, how: str) -> None:
    # A Linux file name is bytes; Python holds the undecodable ones as surrogate escapes.
    state = tmp_path / os.fsdecode(b"proj-\xff-x") / ".ctxd"
    state.mkdir(parents=True, mode=0o700)
    store.connect(state / "index.db").close()
    conn = _open(state, how)
    assert isinstance(conn, sqlite3.Connection)
    assert conn.execute("SELECT 'é'").fetchone() == ("é",)  # text is text again
    conn.close()
