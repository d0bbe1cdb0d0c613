"""A failure of one line that is not bad input (a bug in normalization, attribution or
redaction) quarantines exactly that line, with where and why, and ingest goes on (I6)."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ctxd_hook.hook import build_line
from indexer.config import Config
from indexer.errors import IndexAccessError
from indexer.ingest import lines as ingest_lines
from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up

SEALED = "20200101T00.jsonl"


def _line(n: int) -> bytes:
    event = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": f"p{n}"}
    return build_line(json.dumps(event).encode(), 1_600_000_000 + n, 7)


def _rows(paths: StatePaths, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{paths.index_db}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_an_unexpected_error_quarantines_that_line_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    lines = [_line(n) for n in (1, 2, 3)]
    (paths.spool / SEALED).write_bytes(b"".join(lines))
    real = ingest_lines._ingest_line

    def buggy(batch: Any, raw: Any, line_no: int, *args: Any) -> None:
        if line_no == 2:
            raise KeyError("a bug")
        real(batch, raw, line_no, *args)

    monkeypatch.setattr(ingest_lines, "_ingest_line", buggy)
    with caplog.at_level(logging.ERROR, logger="ctxd.ingest"):
        stats = catch_up(paths, Config()).stats
    assert (stats.entries, stats.quarantined) == (2, 1)
    assert _rows(paths, "SELECT name, offset, line_no, error, raw FROM quarantine") == [
        (SEALED, len(lines[0]), 2, "KeyError: 'a bug'", lines[1][:-1])
    ]
    assert _rows(paths, "SELECT line_no, text FROM entries ORDER BY id") == [(1, "p1"), (3, "p3")]
    # Where it failed, not the message (which may quote the line: see test_log_redaction).
    assert [r.getMessage().split(" in ")[0] for r in caplog.records] == [
        f"quarantined {SEALED} line 2 after KeyError"
    ]


def test_a_database_error_is_not_swallowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    (paths.spool / SEALED).write_bytes(_line(1))

    def broken(*args: Any) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(ingest_lines, "_ingest_line", broken)
    # Not quarantined as a bad line: it stops the pass, as ctxd's own error at the API boundary.
    with pytest.raises(IndexAccessError) as raised:
        catch_up(paths, Config())
    assert isinstance(raised.value.__cause__, sqlite3.OperationalError)
    assert "disk I/O error" in str(raised.value)
