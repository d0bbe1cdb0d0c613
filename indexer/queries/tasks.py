"""Index queries for Claude Code's own tasks (TaskCreate, TaskCreated, TaskCompleted)."""

from __future__ import annotations

import json
import sqlite3


def sessions_with_tasks(conn: sqlite3.Connection) -> list[str]:
    """Sessions holding a TaskCreate call or a task event, the most recent activity first."""
    rows = conn.execute(
        "SELECT session_id, MAX(id) AS last FROM entries"
        " WHERE tool_name='TaskCreate' OR event IN ('task_created','task_completed')"
        " GROUP BY session_id ORDER BY last DESC"
    ).fetchall()
    return [str(r[0]) for r in rows]


def completed_tasks(
    conn: sqlite3.Connection, after_id: int = 0
) -> tuple[list[tuple[str, str]], int]:
    """(session_id, task_id) of every TaskCompleted event after entry `after_id`, and the last
    entry id looked at (the caller's next watermark)."""
    top_row = conn.execute("SELECT COALESCE(MAX(id), 0) FROM entries").fetchone()
    top = int(top_row[0]) if top_row else 0
    rows = conn.execute(
        "SELECT session_id, detail FROM entries WHERE event='task_completed' AND id>? AND id<=?",
        (after_id, top),
    ).fetchall()
    found = []
    for session_id, detail in rows:
        try:
            task_id = json.loads(bytes(detail) or b"{}").get("task_id")
        except (ValueError, AttributeError):
            continue
        if isinstance(task_id, (str, int)) and str(task_id):
            found.append((str(session_id), str(task_id)))
    return found, top
