"""The session duties read a long range of entries in windows and write exactly what one read of
the whole range writes: the same todos.json files, resume states and handoff accounts."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from daemon_helpers import HOOKS, duty_outputs, indexed_corpus

from indexer.config import Config
from indexer.paths import StatePaths
from summarizer.daemon import session_jobs

pytestmark = pytest.mark.skipif(not HOOKS.is_dir(), reason="needs the hook corpus")


def sync(paths: StatePaths, window: int, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(session_jobs, "SYNC_WINDOW", window)
    conn = sqlite3.connect(paths.index_db)
    try:
        return session_jobs.sync_sessions(conn, paths, Config(), 0)
    finally:
        conn.close()


def test_windows_write_what_one_read_of_the_whole_range_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = indexed_corpus(tmp_path / "whole" / "state")
    windowed = StatePaths(tmp_path / "windowed" / "state")
    shutil.copytree(whole.root, windowed.root)
    top = sync(whole, 10_000_000, monkeypatch)
    assert sync(windowed, 7, monkeypatch) == top > 5000
    written = duty_outputs(whole)
    assert sum(name.endswith("todos.json") for name in written) > 10
    assert any(name.startswith("resume/") for name in written)
    assert duty_outputs(windowed) == written
