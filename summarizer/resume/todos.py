"""A session's todo list from TodoWrite, TaskCreate/TaskUpdate and TaskCreated/TaskCompleted."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from indexer import Entry, StatePaths, history, write_atomic

__all__ = [
    "Todo",
    "fold_todos",
    "open_todos",
    "read_todos_file",
    "session_todos",
    "todos_json",
    "write_todos",
]

# Both TodoWrite shapes are seen in the corpus: {content,id,priority,status} (Claude Code 1.0.x)
# and {content,status,activeForm} (later). The Task tools keep a list keyed by task id that is
# shared by every agent of the session; TodoWrite's list is per agent, so only the main agent's
# TodoWrite is the session's list (a subagent's own checklist must not replace it).
TASK_EVENTS = ("task_created", "task_completed")
_DONE = frozenset({"completed", "deleted", "cancelled"})
_ANY = msgspec.json.Decoder()


class Todo(msgspec.Struct, omit_defaults=True):
    """One item of todos.json (`{"todos": [...]}`, seed 002)."""

    content: str
    status: str  # always written: pending | in_progress | completed (no default to omit)
    id: str = ""
    priority: str = ""
    activeForm: str = ""  # Claude Code's field name
    description: str = ""
    owner: str = ""
    source: str = ""  # "TodoWrite" or "task"


def fold_todos(entries: Iterable[Entry]) -> list[Todo]:
    """The todo list after `entries` (oldest first); Task items first, then TodoWrite's (pure)."""
    items = list(entries)
    # A tool call logged both before (PreToolUse) and after (PostToolUse/Failure) counts once:
    # the post event has the response (the task id) and tells whether the call succeeded.
    finished = {
        e.tool_use_id for e in items if e.tool_use_id and e.event in ("tool_result", "tool_failure")
    }
    tasks: dict[str, Todo] = {}
    written: list[Todo] = []
    for e in items:
        if e.event == "tool_failure" or (e.event == "tool_use" and e.tool_use_id in finished):
            continue
        detail = _detail(e)
        if e.tool_name == "TodoWrite" and e.event in ("tool_use", "tool_result"):
            if e.agent_id in ("main", ""):
                written = _todowrite(detail.get("input"))
        elif e.tool_name == "TaskCreate" and e.event in ("tool_use", "tool_result"):
            _task_create(tasks, detail)
        elif e.tool_name == "TaskUpdate" and e.event in ("tool_use", "tool_result"):
            _task_update(tasks, detail.get("input"))
        elif e.event in TASK_EVENTS:
            _task_event(tasks, e, detail)
    return [*tasks.values(), *written]


def open_todos(todos: Iterable[Todo]) -> list[Todo]:
    """Todos not completed, in-progress ones first (stable otherwise)."""
    live = [t for t in todos if t.status not in _DONE]
    return sorted(live, key=lambda t: t.status != "in_progress")


def session_todos(conn: sqlite3.Connection, session_id: str) -> list[Todo]:
    """The session's current todo list, folded from its todo events in the index."""
    return fold_todos(history.todo_entries(conn, session_id))


def todos_json(todos: list[Todo]) -> bytes:
    """The todos.json document, `{"todos": [...]}`, indented for people."""
    doc = {"todos": msgspec.to_builtins(todos)}
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()


def write_todos(paths: StatePaths, session_id: str, todos: list[Todo]) -> bool:
    """Write `.ctxd/sessions/<session>/todos.json` atomically if it changed; True if written."""
    path = paths.session_dir(session_id) / "todos.json"
    data = todos_json(todos)
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    write_atomic(path, data, root=paths.root)
    return True


def read_todos_file(path: Path) -> list[dict[str, Any]] | None:
    """The `todos` list of a todos.json, or None if it is missing or not valid."""
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    todos = doc.get("todos") if isinstance(doc, dict) else None
    return [t for t in todos if isinstance(t, dict)] if isinstance(todos, list) else None


# --- pure helpers ---------------------------------------------------------------------------


def _detail(e: Entry) -> dict[str, Any]:
    data = bytes(e.detail)
    if not data:
        return {}
    try:
        value = _ANY.decode(data)
    except (msgspec.DecodeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _todowrite(tool_input: Any) -> list[Todo]:
    raw = tool_input.get("todos") if isinstance(tool_input, dict) else None
    if not isinstance(raw, list):
        return []
    todos = []
    for item in raw:
        if not isinstance(item, dict):
            continue
        content = _text(item.get("content")) or _text(item.get("activeForm"))
        if not content:
            continue
        todos.append(
            Todo(
                content=content,
                status=_text(item.get("status")) or "pending",
                id=_text(item.get("id")),
                priority=_text(item.get("priority")),
                activeForm=_text(item.get("activeForm")),
                source="TodoWrite",
            )
        )
    return todos


def _next_task_id(tasks: dict[str, Todo]) -> str:
    # Claude Code numbers tasks 1, 2, 3 … per list; used only when the response is missing.
    numbers = [int(k) for k in tasks if k.isdigit()]
    return str(max(numbers, default=0) + 1)


def _task_create(tasks: dict[str, Todo], detail: dict[str, Any]) -> None:
    tool_input = detail.get("input")
    if not isinstance(tool_input, dict):
        return
    response = detail.get("response")
    task = response.get("task") if isinstance(response, dict) else None
    task = task if isinstance(task, dict) else {}
    subject = _text(tool_input.get("subject")) or _text(task.get("subject"))
    task_id = _text(task.get("id"))
    if not subject and not task_id:
        return  # not a task Claude Code could have created
    task_id = task_id or _next_task_id(tasks)
    old = tasks.get(task_id)
    tasks[task_id] = Todo(
        content=subject or (old.content if old else f"Task #{task_id}"),
        status=old.status if old else "pending",
        id=task_id,
        activeForm=_text(tool_input.get("activeForm")),
        description=_text(tool_input.get("description")),
        owner=_text(tool_input.get("owner")),
        source="task",
    )


def _task_update(tasks: dict[str, Todo], tool_input: Any) -> None:
    if not isinstance(tool_input, dict):
        return
    task_id = _text(tool_input.get("taskId"))
    if not task_id:
        return
    status = _text(tool_input.get("status"))
    if status == "deleted":
        tasks.pop(task_id, None)
        return
    # A task created before ctxd was installed still gets an item, named by what we know.
    old = tasks.get(task_id) or Todo(f"Task #{task_id}", "pending", id=task_id, source="task")
    tasks[task_id] = Todo(
        content=_text(tool_input.get("subject")) or old.content,
        status=status or old.status,
        id=task_id,
        activeForm=_text(tool_input.get("activeForm")) or old.activeForm,
        description=_text(tool_input.get("description")) or old.description,
        owner=_text(tool_input.get("owner")) or old.owner,
        source="task",
    )


def _task_event(tasks: dict[str, Todo], e: Entry, detail: dict[str, Any]) -> None:
    task_id = _text(detail.get("task_id"))
    if not task_id:
        return
    old = tasks.get(task_id)
    subject = _text(detail.get("task_subject")) or e.description
    status = "completed" if e.event == "task_completed" else (old.status if old else "pending")
    tasks[task_id] = Todo(
        content=subject or (old.content if old else f"Task #{task_id}"),
        status=status,
        id=task_id,
        activeForm=old.activeForm if old else "",
        description=_text(detail.get("task_description")) or (old.description if old else ""),
        owner=old.owner if old else "",
        source="task",
    )
