"""summarizer/resume/build.py in process: which session is resumed, and what the build writes."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from helpers import payload

from ctxd_hook.hook import build_line
from indexer.index import store
from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up
from summarizer.resume.build import build_for_session_start, target_session

OWN = "11111111-1111-4111-8111-111111111111"
CLEARED = "22222222-2222-4222-8222-222222222222"
NEW = "33333333-3333-4333-8333-333333333333"


# The SessionStart hook gives the build a monotonic deadline; these tests set none that could
# run out (the index is never locked here), so no clock reading reaches an assertion.
NO_DEADLINE = 1e12


def _spool(paths: StatePaths, events: list[tuple[int, dict[str, Any]]]) -> None:
    """Spool (ts_ns, payload fields) events in one segment of the current hour."""
    name = time.strftime("%Y%m%dT%H", time.gmtime()) + ".jsonl"
    with open(paths.spool / name, "ab") as f:
        for ts, fields in events:
            f.write(build_line(payload(**fields), ts, 9))


def _state(tmp_path: Path, events: list[tuple[int, dict[str, Any]]]) -> StatePaths:
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    _spool(paths, events)
    assert catch_up(paths).caught_up
    return paths


def _target(paths: StatePaths, session_id: str, source: str) -> str:
    conn = store.connect(paths.index_db, readonly=True)
    try:
        return target_session(conn, session_id, source)
    finally:
        conn.close()


def test_a_session_with_history_resumes_itself(tmp_path: Path) -> None:
    now = time.time_ns()
    paths = _state(tmp_path, [
        (now, {"session_id": OWN, "hook_event_name": "UserPromptSubmit", "prompt": "fix it"}),
        (now, {"session_id": NEW, "hook_event_name": "SessionStart", "source": "clear"}),
    ])
    assert _target(paths, OWN, "compact") == OWN
    assert _target(paths, OWN, "clear") == OWN
    assert _target(paths, NEW, "compact") == ""  # only its own session_start: no history
    assert _target(paths, NEW, "clear") == ""  # no session ended with /clear


def test_after_clear_the_session_that_just_ended_is_resumed(tmp_path: Path) -> None:
    now = time.time_ns()
    ended = {"session_id": CLEARED, "hook_event_name": "SessionEnd", "reason": "clear"}
    paths = _state(tmp_path, [
        (now - 10**9, {"session_id": CLEARED, "hook_event_name": "UserPromptSubmit",
                       "prompt": "add the login page"}),
        (now, ended),
    ])
    assert _target(paths, NEW, "clear") == CLEARED
    assert _target(paths, NEW, "startup") == ""
    assert _target(paths, CLEARED, "clear") == CLEARED


def test_a_clear_older_than_the_handoff_window_or_another_end_is_not_resumed(
    tmp_path: Path,
) -> None:
    old = time.time_ns() - 700 * 10**9  # the handoff window is 600 s
    other = "44444444-4444-4444-8444-444444444444"
    paths = _state(tmp_path, [
        (old, {"session_id": CLEARED, "hook_event_name": "UserPromptSubmit", "prompt": "p"}),
        (old, {"session_id": CLEARED, "hook_event_name": "SessionEnd", "reason": "clear"}),
        (time.time_ns(), {"session_id": other, "hook_event_name": "UserPromptSubmit",
                          "prompt": "q"}),
        (time.time_ns(), {"session_id": other, "hook_event_name": "SessionEnd",
                          "reason": "logout"}),
    ])
    assert _target(paths, NEW, "clear") == ""


def test_the_build_writes_state_context_and_todos(tmp_path: Path) -> None:
    now = time.time_ns()
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    _spool(paths, [
        (now, {"session_id": OWN, "hook_event_name": "UserPromptSubmit",
               "prompt": "migrate the billing tables"}),
        (now + 1, {"session_id": OWN, "hook_event_name": "PreToolUse", "tool_name": "TodoWrite",
                   "tool_use_id": "toolu_t1",
                   "tool_input": {"todos": [{"content": "write the migration",
                                             "status": "in_progress",
                                             "activeForm": "Writing the migration"}]}}),
    ])
    folder = build_for_session_start(str(paths.root), OWN, "compact", NO_DEADLINE)
    assert folder == str(paths.root / "resume" / OWN)
    state = json.loads((Path(folder) / "precompact_state.json").read_bytes())
    assert state["session_id"] == OWN and state["trigger"] == "session_start"
    assert "migrate the billing tables" in (Path(folder) / "context.md").read_text()
    todos = json.loads((paths.session_dir(OWN) / "todos.json").read_bytes())
    assert [t["content"] for t in todos["todos"]] == ["write the migration"]
    assert build_for_session_start(str(paths.root), NEW, "compact", NO_DEADLINE) == ""


def test_no_index_and_no_spool_builds_nothing(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert build_for_session_start(str(state), OWN, "compact", NO_DEADLINE) == ""


def test_a_build_after_clear_writes_the_cleared_session(tmp_path: Path) -> None:
    now = time.time_ns()
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    _spool(paths, [
        (now - 10**9, {"session_id": CLEARED, "hook_event_name": "UserPromptSubmit",
                       "prompt": "add the login page"}),
        (now, {"session_id": CLEARED, "hook_event_name": "SessionEnd", "reason": "clear"}),
    ])
    folder = build_for_session_start(str(paths.root), NEW, "clear", NO_DEADLINE)
    assert folder == str(paths.root / "resume" / CLEARED)
    assert build_for_session_start(str(paths.root), NEW, "resume", NO_DEADLINE) == ""
