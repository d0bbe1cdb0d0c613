"""Todo lists: both TodoWrite shapes, the Task tools and events, todos.json on every change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from helpers import CORPUS as _CORPUS
from resume_story import SID, make_project, task_events

from ctxd_hook import hook
from indexer.index import store
from indexer.models import Entry, HookPayload
from indexer.paths import StatePaths
from indexer.prepare.normalize import normalize
from indexer.writer.catch_up import catch_up
from summarizer.daemon.session_jobs import catch_up_sessions
from summarizer.resume.todos import Todo, fold_todos, open_todos, read_todos_file, session_todos

CORPUS = _CORPUS / "hooks"
_DECODE = msgspec.json.Decoder(HookPayload)


def entries(*payloads: dict[str, Any]) -> list[Entry]:
    out = []
    for n, p in enumerate(payloads):
        raw = json.dumps({"session_id": "s1", "cwd": "/p", **p}).encode()
        e = normalize(
            _DECODE.decode(raw),
            ts_ns=n + 1,
            pid=1,
            file_id=1,
            offset=n,
            line_no=n,
            max_text_chars=16000,
            max_detail_bytes=16384,
        )
        # What attribution does in the ingest: a subagent's events belong to that agent.
        out.append(msgspec.structs.replace(e, agent_id=p["agent_id"]) if "agent_id" in p else e)
    return out


def post(tool: str, tool_input: Any, response: Any = None, tid: str = "", **kw: Any) -> dict:
    p = {
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": tid,
        **kw,
    }
    if response is not None:
        p["tool_response"] = response
    return p


def pre(tool: str, tool_input: Any, tid: str = "") -> dict:
    return {
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": tid,
    }


OLD_SHAPE = [
    {"content": "Analyse hashing", "status": "completed", "priority": "high", "id": "hash-1"},
    {"content": "Optimise CRC32", "status": "in_progress", "priority": "medium", "id": "hash-2"},
]
NEW_SHAPE = [
    {"content": "Add export_csv", "status": "in_progress", "activeForm": "Adding export_csv"},
    {"content": "Write tests", "status": "pending", "activeForm": "Writing tests"},
]


def test_todowrite_old_shape_keeps_id_and_priority() -> None:
    todos = fold_todos(entries(post("TodoWrite", {"todos": OLD_SHAPE}, {"oldTodos": []})))
    assert [(t.id, t.priority, t.status, t.content) for t in todos] == [
        ("hash-1", "high", "completed", "Analyse hashing"),
        ("hash-2", "medium", "in_progress", "Optimise CRC32"),
    ]


def test_todowrite_new_shape_keeps_active_form_and_replaces_the_list() -> None:
    first = post("TodoWrite", {"todos": OLD_SHAPE}, tid="t1")
    second = post("TodoWrite", {"todos": NEW_SHAPE}, tid="t2")
    todos = fold_todos(entries(first, second))
    assert [t.content for t in todos] == ["Add export_csv", "Write tests"]
    assert todos[0].activeForm == "Adding export_csv"
    assert [t.content for t in open_todos(todos)] == ["Add export_csv", "Write tests"]


def test_pre_and_post_of_one_call_count_once_and_failures_not_at_all() -> None:
    create = {"subject": "Ship it", "description": "d"}
    evs = entries(
        pre("TaskCreate", create, "c1"),
        post("TaskCreate", create, {"task": {"id": "7", "subject": "Ship it"}}, "c1"),
        {
            "hook_event_name": "PostToolUseFailure",
            "tool_name": "TaskUpdate",
            "tool_input": {"taskId": "7", "status": "completed"},
            "tool_use_id": "u1",
            "error": "no such task",
        },
        pre("TaskUpdate", {"taskId": "7", "status": "completed"}, "u1"),
    )
    assert fold_todos(evs) == [Todo("Ship it", "pending", "7", description="d", source="task")]


def test_task_tools_create_update_delete_and_events() -> None:
    evs = entries(
        post("TaskCreate", {"subject": "A"}, {"task": {"id": "1", "subject": "A"}}, "c1"),
        post("TaskCreate", {"subject": "B"}, {"task": {"id": "2", "subject": "B"}}, "c2"),
        pre("TaskCreate", {"subject": "C (no response seen)"}, "c3"),
        post("TaskUpdate", {"taskId": "1", "status": "in_progress", "owner": "me"}, {}, "u1"),
        post("TaskUpdate", {"taskId": "2", "status": "deleted"}, {}, "u2"),
        post("TaskUpdate", {"taskId": "9", "status": "pending", "subject": "Old task"}, {}, "u3"),
        {"hook_event_name": "TaskCreated", "task_id": "4", "task_subject": "D"},
        {"hook_event_name": "TaskCompleted", "task_id": "3", "task_subject": "C"},
    )
    todos = {t.id: t for t in fold_todos(evs)}
    assert set(todos) == {"1", "3", "9", "4"}
    assert (todos["1"].status, todos["1"].owner) == ("in_progress", "me")
    assert (todos["3"].content, todos["3"].status) == ("C", "completed")  # id 3 by numbering
    assert todos["9"].content == "Old task"
    assert todos["4"].status == "pending"
    assert [t.id for t in open_todos(todos.values())] == ["1", "9", "4"]


def test_subagent_todowrite_does_not_replace_the_session_list() -> None:
    mine = post("TodoWrite", {"todos": NEW_SHAPE}, tid="t1")
    theirs = post("TodoWrite", {"todos": OLD_SHAPE}, tid="t2", agent_id="a1b2c3", agent_type="x")
    assert [t.content for t in fold_todos(entries(mine, theirs))] == [
        "Add export_csv",
        "Write tests",
    ]


@pytest.mark.parametrize("bad", [None, "x", [1, 2], {"todos": "nope"}, {"todos": [1, {}]}])
def test_malformed_inputs_are_ignored(bad: Any) -> None:
    evs = entries(
        post("TodoWrite", bad, tid="t"),
        post("TaskUpdate", bad, tid="u"),
        post("TaskCreate", bad, tid="c"),
    )
    assert fold_todos(evs) == []


def test_todos_json_written_atomically_on_every_change(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    paths = StatePaths(project / ".ctxd")
    env = {"CLAUDE_PROJECT_DIR": str(project)}
    todo_file = paths.sessions / SID / "todos.json"

    def emit(p: dict[str, Any]) -> None:
        hook.run(json.dumps(p).encode(), env, str(project))

    emit({**post("TodoWrite", {"todos": NEW_SHAPE}, tid="t1"), "session_id": SID})
    catch_up_sessions(paths)
    assert read_todos_file(todo_file) == [
        {
            "content": "Add export_csv",
            "status": "in_progress",
            "activeForm": "Adding export_csv",
            "source": "TodoWrite",
        },
        {
            "content": "Write tests",
            "status": "pending",
            "activeForm": "Writing tests",
            "source": "TodoWrite",
        },
    ]
    for p in task_events(project):
        emit(p)
    catch_up_sessions(paths)
    doc = json.loads(todo_file.read_bytes())
    assert list(doc) == ["todos"]
    assert [t.get("id") for t in doc["todos"]] == ["1", "2", None, None]
    assert todo_file.stat().st_mode & 0o777 == 0o600
    assert not list(todo_file.parent.glob(".*.tmp"))
    before = todo_file.stat().st_mtime_ns
    catch_up_sessions(paths)  # nothing new: the file is not rewritten
    assert todo_file.stat().st_mtime_ns == before


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")
def test_corpus_todowrite_lists_match_the_last_call(tmp_path: Path) -> None:
    """Every corpus session with TodoWrite ends with the list of its last TodoWrite call."""
    paths = StatePaths(tmp_path / "state")
    env = {"CTXD_HOME": str(paths.root)}
    expected: dict[str, list[str]] = {}
    for name in ("post_tool_use.jsonl",):
        for path in sorted(CORPUS.glob(f"*/{name}")):
            for line in path.read_bytes().splitlines():
                p = json.loads(line)
                if p.get("tool_name") != "TodoWrite" or p.get("agent_id"):
                    continue
                todos = p.get("tool_input", {}).get("todos", [])
                expected[p["session_id"]] = [t["content"] for t in todos]
                hook.run(line, env, str(tmp_path))
    assert expected, "the corpus has TodoWrite calls"
    catch_up(paths)
    conn = store.connect(paths.index_db, readonly=True)
    try:
        for session_id, contents in expected.items():
            assert [t.content for t in session_todos(conn, session_id)] == contents
    finally:
        conn.close()
