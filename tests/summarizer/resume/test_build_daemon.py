"""summarizer/resume/build.py beside a running daemon, in process: its wait, and what it reads.

The test process plays the daemon: it holds the writer lock (a flock on its own descriptor,
which the build sees as held) and indexes the spool itself when the test says so.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import payload

from ctxd_hook.hook import build_line
from indexer.paths import StatePaths
from indexer.search import index as search_index
from indexer.writer.catch_up import catch_up, open_writer, writer_lock
from summarizer.resume.build import build_for_session_start, daemon_wait_s

OWN = "11111111-1111-4111-8111-111111111111"
# A monotonic deadline long past: the build gives a running daemon its minimum wait.
PAST = 0.0
# One that never comes: the build waits for the daemon as long as it takes.
NO_DEADLINE = 1e12


def _spool(paths: StatePaths, events: list[dict[str, Any]]) -> None:
    name = time.strftime("%Y%m%dT%H", time.gmtime()) + ".jsonl"
    now = time.time_ns()
    with open(paths.spool / name, "ab") as f:
        for i, fields in enumerate(events):
            f.write(build_line(payload(session_id=OWN, **fields), now + i, 9))


def _prompt(text: str) -> dict[str, Any]:
    return {"hook_event_name": "UserPromptSubmit", "prompt": text}


def _todo(content: str) -> dict[str, Any]:
    return {"hook_event_name": "PreToolUse", "tool_name": "TodoWrite", "tool_use_id": "toolu_1",
            "tool_input": {"todos": [{"content": content, "status": "in_progress",
                                      "activeForm": content}]}}


def _daemon_pass(paths: StatePaths) -> None:
    """What the daemon holding the lock does: index everything in the spool now."""
    writer = open_writer(paths)
    try:
        writer.start()
        while writer.pass_once().lines:
            pass
    finally:
        writer.close()


def test_the_wait_is_six_tenths_of_the_time_left_and_never_under_a_tenth() -> None:
    assert daemon_wait_s(10.0, 9.0) == pytest.approx(0.6)
    assert daemon_wait_s(110.0, 10.0) == pytest.approx(60.0)
    assert daemon_wait_s(10.0, 9.9) == pytest.approx(0.1)  # 0.06 s left: the floor
    assert daemon_wait_s(10.0, 50.0) == 0.1  # past the deadline


def test_a_daemon_that_has_not_created_the_index_yet_gets_no_index_made_for_it(
    tmp_path: Path,
) -> None:
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    with writer_lock(paths):
        assert build_for_session_start(str(paths.root), OWN, "compact", PAST) == ""
        _spool(paths, [_prompt("fix the parser")])
        # The daemon still has not indexed it: the build gives up after its wait.
        assert build_for_session_start(str(paths.root), OWN, "compact", PAST) == ""
    assert not paths.index_db.exists()


def test_a_daemon_that_does_not_catch_up_in_time_leaves_the_index_as_it_stands(
    tmp_path: Path,
) -> None:
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    _spool(paths, [_prompt("migrate the billing tables"), _todo("write the migration")])
    assert catch_up(paths).caught_up
    _spool(paths, [_prompt("now rename the invoices column")])
    with writer_lock(paths):
        folder = build_for_session_start(str(paths.root), OWN, "compact", PAST)
    assert folder == str(paths.root / "resume" / OWN)
    context = (Path(folder) / "context.md").read_text()
    assert "migrate the billing tables" in context
    assert "rename the invoices column" not in context  # not indexed: never read from the spool
    state = json.loads((Path(folder) / "precompact_state.json").read_bytes())
    assert state["trigger"] == "session_start"
    # todos.json is the daemon's to keep current while it runs, not this reader's.
    assert not (paths.session_dir(OWN) / "todos.json").exists()


def test_the_build_waits_for_the_daemon_and_reads_what_it_indexed(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    _spool(paths, [_prompt("migrate the billing tables")])
    assert catch_up(paths).caught_up
    _spool(paths, [_prompt("now rename the invoices column")])
    result: list[str] = []
    with writer_lock(paths):
        build = threading.Thread(
            target=lambda: result.append(
                build_for_session_start(str(paths.root), OWN, "compact", NO_DEADLINE)
            ),
            daemon=True,
        )
        build.start()
        _daemon_pass(paths)
        build.join(timeout=300.0)
    assert result == [str(paths.root / "resume" / OWN)]
    context = (Path(result[0]) / "context.md").read_text()
    assert "rename the invoices column" in context


def test_the_build_only_reads_an_index_whose_daemon_holds_the_lock(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    _spool(paths, [_prompt("migrate the billing tables")])
    assert catch_up(paths).caught_up
    # As an index from a ctxd before search: a writer opening it would add the search index.
    conn = sqlite3.connect(paths.index_db)
    with conn:
        conn.execute("DELETE FROM meta WHERE key = 'search.version'")
    conn.close()
    with writer_lock(paths):
        folder = build_for_session_start(str(paths.root), OWN, "compact", PAST)
    assert folder == str(paths.root / "resume" / OWN)
    conn = sqlite3.connect(f"file:{paths.index_db}?mode=ro", uri=True)
    try:
        # Only the lock holder writes the index; this reader left it as it was.
        assert not search_index.has_search(conn)
    finally:
        conn.close()
