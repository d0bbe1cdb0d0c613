"""The Claude Code task behind `ctxd task init --from-claude-task ID`, from the index."""

from __future__ import annotations

import argparse

from indexer import completed_tasks, history, sessions_with_tasks
from summarizer.common.cliargs import state_paths
from summarizer.daemon.session_jobs import catch_up_sessions
from summarizer.resume.todos import session_todos
from summarizer.tasks.errors import TaskValidationError
from summarizer.tasks.lifecycle import linked_tasks, purge_completed


def sweep_completed(args: argparse.Namespace) -> list[str]:
    """Without a daemon, purge the contexts whose Claude Code task completed (I12); only when
    some context is linked to one, so other task commands never touch the index."""
    paths = state_paths(args)
    if not linked_tasks(paths.root):
        return []
    catch_up_sessions(paths)
    if not paths.index_db.exists():
        return []
    conn = history.connect(paths.index_db, readonly=True)
    try:
        completed, _top = completed_tasks(conn)
    finally:
        conn.close()
    return purge_completed(paths.root, completed)


def claude_task(args: argparse.Namespace, task_id: str) -> dict[str, str]:
    """{id, subject, description, session} of the task as last seen (newest session first)."""
    paths = state_paths(args)
    catch_up_sessions(paths)
    if paths.index_db.exists():
        conn = history.connect(paths.index_db, readonly=True)
        try:
            wanted = [args.session] if args.session else sessions_with_tasks(conn)
            for session_id in wanted:
                for todo in session_todos(conn, session_id):
                    if todo.source == "task" and todo.id == task_id:
                        return {
                            "id": task_id,
                            "subject": todo.content,
                            "description": todo.description,
                            "session": session_id,
                        }
        finally:
            conn.close()
    raise TaskValidationError(
        f"no Claude Code task {task_id!r} in the index of {paths.root}: check the id "
        "(`ctxd resume SESSION` lists a session's tasks) or use --task-file"
    )
