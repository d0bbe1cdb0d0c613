"""Daemon duty for the task cache: purge a context when its Claude Code task completes."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from indexer import IngestStats, history
from indexer.task_lookup import completed_tasks
from summarizer.tasks.lifecycle import purge_completed

if TYPE_CHECKING:
    from summarizer.daemon.host import DaemonHost as Daemon

log = logging.getLogger("ctxd.tasks")
WATERMARK_KEY = "tasks.watermark"


class TaskListener:
    """A Daemon batch listener: TaskCompleted events since the watermark purge linked contexts."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon

    def __call__(self, _stats: IngestStats | None = None) -> None:
        daemon = self.daemon
        with daemon.index_lock:
            if daemon.writer is None:
                return
            conn = daemon.writer.conn
            after = int(history.get_meta(conn, WATERMARK_KEY, "0") or 0)
            completed, top = completed_tasks(conn, after)
            if top == after:
                return
            try:
                for task_id in purge_completed(daemon.paths.root, completed):
                    log.info("purged the context of %s: its Claude Code task completed", task_id)
            except Exception:
                log.exception("purging completed task contexts failed; the next batch retries")
                return
            with history.transaction(conn):
                history.set_meta(conn, WATERMARK_KEY, str(top))


def attach(daemon: Daemon) -> None:
    """Wire the task duty into a started daemon."""
    listener = TaskListener(daemon)
    daemon.listeners.append(listener)
    try:
        listener()
    except Exception:
        log.exception("initial task sweep failed; the next batch retries it")
