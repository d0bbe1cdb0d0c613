"""The session duties read a long range of entries in windows and write exactly what one read of
the whole range writes: the same todos.json files, resume states and handoff accounts."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from helpers import CORPUS

from indexer.config import Config
from indexer.hook import build_line
from indexer.paths import StatePaths
from indexer.writer import catch_up
from summarizer.daemon import session_jobs

HOOKS = CORPUS / "hooks"
T0 = 1_790_000_000_000_000_000
pytestmark = pytest.mark.skipif(not HOOKS.is_dir(), reason="needs the hook corpus")
# Written at build time, so they differ between two builds of the same state.
_CLOCK_KEYS = {"created_at", "created_ns"}
_CLOCK_TEXT = re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")


def indexed_corpus(root: Path) -> StatePaths:
    """Every corpus hook payload spooled in file order and indexed (no session duties yet)."""
    paths = StatePaths(root)
    paths.ensure()
    lines = []
    for path in sorted(HOOKS.rglob("*.jsonl")):
        for raw in path.read_bytes().splitlines():
            if raw.strip():
                lines.append(build_line(raw, T0 + len(lines), 4242))
    (paths.spool / "20260101T00.jsonl").write_bytes(b"".join(lines))
    catch_up(paths, Config())
    return paths


def sync(paths: StatePaths, window: int, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(session_jobs, "SYNC_WINDOW", window)
    conn = sqlite3.connect(paths.index_db)
    try:
        return session_jobs.sync_sessions(conn, paths, Config(), 0)
    finally:
        conn.close()


def outputs(paths: StatePaths) -> dict[str, Any]:
    """Every file the session duties wrote, JSON without its build-time clock fields."""
    found: dict[str, Any] = {}
    for folder in (paths.sessions, paths.root / "resume", paths.root / "handoff"):
        for p in sorted(folder.rglob("*")) if folder.is_dir() else []:
            if not p.is_file() or p.suffix == ".jsonl":
                continue  # the views are the ingest's, not the duties'
            data = p.read_bytes()
            if p.suffix == ".json":
                loaded = json.loads(data)
                if isinstance(loaded, dict):
                    loaded = {k: v for k, v in loaded.items() if k not in _CLOCK_KEYS}
                found[str(p.relative_to(paths.root))] = loaded
            else:
                found[str(p.relative_to(paths.root))] = _CLOCK_TEXT.sub(b"<now>", data)
    return found


def test_windows_write_what_one_read_of_the_whole_range_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = indexed_corpus(tmp_path / "whole" / "state")
    windowed = StatePaths(tmp_path / "windowed" / "state")
    shutil.copytree(whole.root, windowed.root)
    top = sync(whole, 10_000_000, monkeypatch)
    assert sync(windowed, 7, monkeypatch) == top > 5000
    written = outputs(whole)
    assert sum(name.endswith("todos.json") for name in written) > 10
    assert any(name.startswith("resume/") for name in written)
    assert outputs(windowed) == written
