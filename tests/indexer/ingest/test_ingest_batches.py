"""Line numbers and offsets stay exact across batch boundaries (small `batch_lines`/`batch_bytes`).

A segment of known lines, two of them bad, is ingested in batches of every small size; each
entry and each quarantine row must carry the line number and byte offset that a plain
`split(b"\\n")` of the segment gives, and the segment's line count must be the number of lines.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ctxd_hook.hook import build_line
from indexer.config import Config, IngestConfig
from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up

SEALED = "20200101T00.jsonl"  # an hour long past: complete, no hook appends to it
SESSION = "0f6a6c8e-1b2d-4c3e-9f40-5a6b7c8d9e01"
BAD = {11, 16, 23}  # 1-based line numbers of lines that are not JSON


def _good(n: int) -> bytes:
    event = {
        "session_id": SESSION,
        "hook_event_name": "PreToolUse",
        "cwd": "/home/dev/app",
        "tool_name": "Bash",
        "tool_use_id": f"toolu_{n:06d}",
        "tool_input": {"command": f"echo {n}", "description": f"Echo {n}"},
    }
    return build_line(json.dumps(event, separators=(",", ":")).encode(), 1_600_000_000 + n, 7)


def _segment(first: int, last: int) -> bytes:
    """Lines first..last (1-based): a hook line each, or a non-JSON line at the BAD numbers."""
    return b"".join(
        f"garbage line {n}, not JSON\n".encode() if n in BAD else _good(n)
        for n in range(first, last + 1)
    )


def _expected(data: bytes) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(line_no, offset) of the good and of the bad lines, found by splitting the bytes."""
    good, bad, offset = [], [], 0
    for line_no, text in enumerate(data.split(b"\n")[:-1], start=1):
        (bad if text.startswith(b"garbage") else good).append((line_no, offset))
        offset += len(text) + 1
    return good, bad


def _rows(paths: StatePaths, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{paths.index_db}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize(
    "ingest",
    [{"batch_lines": n} for n in (1, 2, 3, 4, 5, 7, 10, 5000)] + [{"batch_bytes": 700}],
    ids=lambda d: "-".join(f"{k}={v}" for k, v in d.items()),
)
def test_line_numbers_and_offsets_are_exact_across_batches(
    tmp_path: Path, ingest: dict[str, int]
) -> None:
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    config = Config(ingest=IngestConfig(**ingest))
    segment = paths.spool / SEALED
    segment.write_bytes(_segment(1, 20))
    first = catch_up(paths, config).stats
    segment.write_bytes(segment.read_bytes() + _segment(21, 26))  # a second pass, later
    second = catch_up(paths, config).stats

    good, bad = _expected(segment.read_bytes())
    assert [n for n, _ in bad] == sorted(BAD)
    assert (first.lines, second.lines) == (20, 6)
    assert (first.entries + second.entries, first.quarantined + second.quarantined) == (23, 3)
    assert _rows(paths, "SELECT line_no, offset FROM entries ORDER BY id") == good
    assert _rows(paths, "SELECT line_no, offset FROM quarantine ORDER BY id") == bad
    assert _rows(paths, "SELECT line_no, offset FROM files") == [(26, segment.stat().st_size)]
    tools = _rows(paths, "SELECT tool_use_id FROM entries ORDER BY id")
    assert tools == [(f"toolu_{n:06d}",) for n in range(1, 27) if n not in BAD]


@pytest.mark.parametrize("tail", [b"\n", b"\n\n", b" \n"], ids=["one-byte", "two-bytes", "blank"])
def test_blank_lines_at_the_end_are_consumed(tmp_path: Path, tail: bytes) -> None:
    """A blank last line (even one single byte) is read and counted, and the offset reaches
    the end: nothing is left to make the spool look behind."""
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    segment = paths.spool / SEALED
    segment.write_bytes(_good(1) + tail)
    stats = catch_up(paths, Config(ingest=IngestConfig(batch_lines=1))).stats  # 1 byte left
    assert stats.entries == 1
    size = segment.stat().st_size
    assert _rows(paths, "SELECT offset FROM files") == [(size,)]
    assert _rows(paths, "SELECT line_no FROM files") == [(1 + tail.count(b"\n"),)]
