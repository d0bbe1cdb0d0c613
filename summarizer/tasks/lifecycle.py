"""Lifecycle: a context linked to a Claude Code task is purged when that task completes."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from indexer import CtxdError
from summarizer.tasks.store import TaskStore


def linked_tasks(state_root: Path) -> dict[str, tuple[str, str]]:
    """task id -> (session, Claude Code task id) of every context built from a Claude Code task."""
    store = TaskStore(state_root / "tasks")
    linked = {}
    for task_id in store.list():
        try:
            ctx = store.read(task_id)
        except CtxdError:
            continue
        if ctx.linked_claude_task:
            linked[task_id] = (ctx.linked_claude_session, ctx.linked_claude_task)
    return linked


def purge_completed(state_root: Path, completed: Iterable[tuple[str, str]]) -> list[str]:
    """Purge the contexts linked to any of the completed (session, task id) pairs; a link
    without a session matches the task id in any session."""
    done = set(completed)
    any_session = {task for _session, task in done}
    if not done:
        return []
    store = TaskStore(state_root / "tasks")
    purged = []
    with store.lock():
        for task_id, link in sorted(linked_tasks(state_root).items()):
            if link in done or (not link[0] and link[1] in any_session):
                store.purge(task_id)
                purged.append(task_id)
    return purged
