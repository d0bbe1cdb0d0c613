"""indexer.queries.query / history / purge: the summarizer's read and delete API, on a real index."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ctxd_hook.hook import run
from indexer.paths import StatePaths
from indexer.queries import history, query
from indexer.retention import purge
from indexer.writer.catch_up import catch_up
from tests.helpers import payload

S1 = "11111111-1111-4111-8111-111111111111"
S2 = "22222222-2222-4222-8222-222222222222"


def _event(state: Path, **fields: object) -> None:
    assert run(payload(**fields), {"CTXD_HOME": str(state)}, "/")  # the spool file written


@pytest.fixture
def state(tmp_path: Path) -> StatePaths:
    """An index of two sessions: S1 with prompts, a todo list and an edit; S2 ended by /clear."""
    root = tmp_path / "state"
    _event(root, session_id=S1, hook_event_name="UserPromptSubmit", prompt="continue")
    _event(root, session_id=S1, hook_event_name="UserPromptSubmit", prompt="add a CSV export")
    todos = [{"content": "write the exporter", "status": "in_progress", "activeForm": "Writing"}]
    _event(
        root,
        session_id=S1,
        hook_event_name="PostToolUse",
        tool_name="TodoWrite",
        tool_use_id="toolu_todo1",
        tool_input={"todos": todos},
        tool_response={"newTodos": todos},
    )
    _event(
        root,
        session_id=S1,
        hook_event_name="PostToolUse",
        tool_name="Edit",
        tool_use_id="toolu_edit1",
        tool_input={"file_path": "/home/dev/app/export.py", "old_string": "a", "new_string": "b"},
        tool_response={"filePath": "/home/dev/app/export.py"},
    )
    _event(root, session_id=S2, hook_event_name="UserPromptSubmit", prompt="other work")
    _event(root, session_id=S2, hook_event_name="SessionEnd", reason="clear")
    paths = StatePaths(root)
    catch_up(paths)
    return paths


def test_sessions_are_listed_resolved_and_described(state: StatePaths) -> None:
    conn = query.open_index(state.index_db)
    try:
        rows = query.session_rows(conn)
        assert {r[0] for r in rows} == {S1, S2}
        assert [r[0] for r in query.session_rows(conn, session_id=S1.upper().lower())] == [S1]
        assert [r[0] for r in query.session_rows(conn, id_prefix="1111")] == [S1]
        assert query.session_rows(conn, id_prefix="1_1") == []  # "_" is no wildcard
        assert len(query.session_rows(conn, limit=1)) == 1
        assert query.session_exists(conn, S1) and not query.session_exists(conn, "nope")
        header = query.session_header(conn, S1)
        assert header is not None and header[1] == "continue"  # the first prompt
        assert query.session_prompts(conn, S1) == ["continue", "add a CSV export"]
        assert query.has_history(conn, S1)
        last = query.last_entry(conn, S1)
        assert last is not None and last[0] == history.max_entry_id(conn) - 2
        assert query.newest_activity_ns(conn, S1) > 0
        assert query.latest_session(conn) == S2
        assert set(query.session_ids_active_since(conn, 0)) == {S1, S2}
        assert query.session_ids_before(conn, time.time_ns() + 10**12) == [S1, S2]
        assert query.clear_handoff_session(conn, S1, 0) == S2  # S2 ended with /clear
        assert query.clear_handoff_session(conn, S2, 0) == ""
        counts = query.table_counts(conn, ("sessions", "entries"))
        assert counts == [2, history.count(conn, "entries")]
        with pytest.raises(ValueError, match="unknown table"):
            query.table_counts(conn, ("sessions; DROP TABLE entries",))
        assert query.integrity_problems(conn) == ""
    finally:
        conn.close()


def test_entries_todos_edits_and_meta(state: StatePaths) -> None:
    conn = history.connect(state.index_db)
    try:
        prompts = history.recent_entries(conn, S1, "prompt", 5)
        assert [e.text for e in prompts] == ["add a CSV export", "continue"]  # newest first
        todo = history.todo_entries(conn, S1)
        assert [e.tool_name for e in todo] == ["TodoWrite"]
        top = history.max_entry_id(conn)
        edits = history.recent_edits(conn, 0, top + 1, S1)
        assert len(edits) == 1 and "export.py" in edits[0][0]
        assert [r[1] for r in history.todo_and_trigger_events(conn, 0, top)] == [
            "tool_result",
            "session_end",
        ]
        assert [e.session_id for e in history.session_entries(conn, S2, 10)] == [S2, S2]
        with history.transaction(conn):
            history.set_meta(conn, "mem.published", str(top))
        assert query.published_if_level(conn) == top
        assert query.meta_values(conn, ("mem.published",), "anomaly.") == {
            "mem.published": str(top)
        }
    finally:
        conn.close()


def test_expire_and_delete_through_purge(state: StatePaths) -> None:
    conn = history.connect(state.index_db)
    try:
        before = history.count(conn, "entries")
        assert purge.expire_before(conn, state, 0) == (0, [])  # nothing is older than 1970
        entries, gone = purge.expire_before(conn, state, time.time_ns() + 10**12)
        assert entries == before and sorted(gone) == [S1, S2]
        assert history.count(conn, "entries") == 0 and query.session_rows(conn) == []
    finally:
        conn.close()


def test_forget_deletes_only_tables_that_exist(state: StatePaths) -> None:
    conn = history.connect(state.index_db)
    try:
        with history.transaction(conn):
            n = purge.delete_session_rows(conn, S2, ("entries", "sessions", "mem_decisions"))
        assert n == 3  # two entries and the session row; no memory table yet
        assert not query.session_exists(conn, S2) and query.session_exists(conn, S1)
    finally:
        conn.close()


def test_the_light_query_module_loads_no_msgspec(state: StatePaths) -> None:
    # `ctxd read` and `ctxd status` import indexer.queries.query: it must stay sqlite3-and-stdlib.
    import subprocess
    import sys

    code = (
        "import sys; from indexer.queries import query;"
        f"c = query.connect_readonly(__import__('pathlib').Path({str(state.index_db)!r}));"
        f"print(query.session_exists(c, {S1!r}), 'msgspec' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]
