"""Daemon duty for the task cache: purge a context when its Claude Code task completes."""

from __future__ import annotations

import logging
import sqlite3
from typing import TYPE_CHECKING

from indexer import completed_tasks
from summarizer.daemon.watermark import Duty, WatermarkListener
from summarizer.tasks.lifecycle import purge_completed

if TYPE_CHECKING:
    from summarizer.daemon.host import DaemonHost as Daemon

log = logging.getLogger("ctxd.tasks")
WATERMARK_KEY = "tasks.watermark"


def purge_duty(daemon: Daemon) -> Duty:
    """TaskCompleted events since the watermark purge the contexts linked to those tasks."""

    def duty(conn: sqlite3.Connection, after: int) -> int:
        completed, top = completed_tasks(conn, after)
        if top == after:
            return after
        try:
            for task_id in purge_completed(daemon.paths.root, completed):
                log.info("purged the context of %s: its Claude Code task completed", task_id)
        except Exception:
            log.exception("purging completed task contexts failed; the next batch retries")
            return after
        return top

    return duty


def attach(daemon: Daemon) -> None:
    """Wire the task duty into a started daemon."""
    listener = WatermarkListener(daemon, WATERMARK_KEY, purge_duty(daemon))
    daemon.listeners.append(listener)
    try:
        listener()
    except Exception:
        log.exception("initial task sweep failed; the next batch retries it")
