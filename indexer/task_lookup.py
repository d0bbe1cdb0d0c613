"""Index queries for Claude Code's own tasks (TaskCreate, TaskCreated, TaskCompleted)."""

from __future__ import annotations

import sqlite3


def sessions_with_tasks(conn: sqlite3.Connection) -> list[str]:
    """Sessions holding a TaskCreate call or a task event, the most recent activity first."""
    rows = conn.execute(
        "SELECT session_id, MAX(id) AS last FROM entries"
        " WHERE tool_name='TaskCreate' OR event IN ('task_created','task_completed')"
        " GROUP BY session_id ORDER BY last DESC"
    ).fetchall()
    return [str(r[0]) for r in rows]
