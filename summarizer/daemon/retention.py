"""Retention: delete spool segments fully indexed and old; optionally prune old index entries."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from indexer import (
    Config,
    RetentionReport,
    StateDirError,
    StatePaths,
    is_valid_session_id,
    prune_quarantine,
    prune_spool,
    purge,
    safefs,
)
from summarizer.handoff.queue import ACCOUNTS_DIR, HANDOFF_DIR

if TYPE_CHECKING:
    from summarizer.daemon.host import DaemonHost as Daemon

__all__ = [
    "RetentionReport",
    "prune_index",
    "prune_quarantine",
    "prune_spool",
    "run_retention",
    "start_retention_job",
]

log = logging.getLogger("ctxd.retention")
_FIRST_RUN_DELAY_S = 60.0


def prune_index(
    conn: sqlite3.Connection, paths: StatePaths, index_days: float, now: float | None = None
) -> tuple[int, int]:
    """Delete entries older than `index_days` (0 = keep all); sessions wholly older go too,
    with their views and resume files. Returns (entries deleted, sessions deleted).

    The views are then rebuilt so that they hold exactly what the index holds; the rebuild
    request commits with the deletion, so a kill at any later point is finished by the next
    writer. A caller that keeps view files open must forget them afterwards.
    """
    if index_days <= 0:
        return 0, 0
    cutoff_ns = int(((now if now is not None else time.time()) - index_days * 86400) * 1e9)
    entries, gone = purge.expire_before(conn, paths, cutoff_ns)
    for sid in gone:
        if is_valid_session_id(sid):
            for folder in (paths.sessions / sid, paths.resume / sid):
                _remove(paths, folder)
            _remove(paths, paths.root / HANDOFF_DIR / "sessions" / sid)  # its handoff queue
            _remove(paths, paths.root / "pages" / f"{sid}.html")  # `ctxd view`'s page of it
    _drop_old_accounts(paths, cutoff_ns)
    return int(entries), len(gone)


def _remove(paths: StatePaths, path: Path) -> None:
    try:
        safefs.rmtree(paths.root, path)  # by fds: a symlink is removed itself, never followed
    except (OSError, StateDirError) as e:
        log.warning("retention: cannot remove %s: %s", path, e)


def _drop_old_accounts(paths: StatePaths, cutoff_ns: int) -> None:
    """Remove agents' accounts written before the cutoff: they tell of runs whose entries
    are gone (an account is written when its run ends; a later run writes a new one)."""
    try:
        fd = safefs.open_dir(paths.root, paths.root / HANDOFF_DIR / ACCOUNTS_DIR, create=False)
    except (OSError, StateDirError):
        return  # none yet, or not a real folder: nothing is deleted through a symlink
    try:
        with os.scandir(fd) as found:
            for item in found:
                try:
                    if (
                        item.name.endswith(".md")
                        and item.stat(follow_symlinks=False).st_mtime_ns < cutoff_ns
                    ):
                        os.unlink(item.name, dir_fd=fd)
                except OSError:
                    pass
    finally:
        os.close(fd)


def run_retention(
    conn: sqlite3.Connection, paths: StatePaths, config: Config, now: float | None = None
) -> RetentionReport:
    """One retention pass: spool first, then the index (if `[retention] index_days` > 0)."""
    report = prune_spool(conn, paths, config.retention.spool_hours, now)
    report.quarantined_deleted = prune_quarantine(conn, config.retention.quarantine_days, now)
    report.entries_deleted, report.sessions_deleted = prune_index(
        conn, paths, config.retention.index_days, now
    )
    if report.segments_deleted or report.entries_deleted:
        log.info(
            "retention: deleted %d spool segments, %d entries, %d sessions",
            len(report.segments_deleted),
            report.entries_deleted,
            report.sessions_deleted,
        )
    return report


def start_retention_job(daemon: Daemon) -> threading.Thread:
    """Run retention in the daemon every `[retention] interval_s` (first after a minute)."""
    interval = daemon.config.retention.interval_s

    def loop() -> None:
        delay = min(_FIRST_RUN_DELAY_S, interval)
        while not daemon.stopping.wait(delay):
            delay = interval
            try:
                with daemon.index_lock:
                    if daemon.writer is not None:
                        run_retention(daemon.writer.conn, daemon.paths, daemon.config)
                        daemon.writer.views.forget()  # views may have been replaced
            except Exception:
                log.exception("retention run failed; retrying in %.0f s", interval)

    thread = threading.Thread(target=loop, name="ctxd-retention", daemon=True)
    thread.start()
    return thread
