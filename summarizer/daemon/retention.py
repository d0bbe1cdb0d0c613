"""Retention: delete spool segments fully indexed and old; optionally prune old index entries."""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from indexer import RetentionReport, prune_quarantine, prune_spool, purge
from indexer.config import Config
from indexer.paths import StatePaths, is_valid_session_id
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
                shutil.rmtree(folder, ignore_errors=True)
            if _plain_dirs(paths.root, HANDOFF_DIR, "sessions"):
                shutil.rmtree(paths.root / HANDOFF_DIR / "sessions" / sid, ignore_errors=True)
            if _plain_dirs(paths.root, "pages"):
                _unlink(paths.root / "pages" / f"{sid}.html")  # `ctxd view`'s page of it
    _drop_old_accounts(paths, cutoff_ns)
    return int(entries), len(gone)


def _drop_old_accounts(paths: StatePaths, cutoff_ns: int) -> None:
    """Remove agents' accounts written before the cutoff: they tell of runs whose entries
    are gone (an account is written when its run ends; a later run writes a new one)."""
    if not _plain_dirs(paths.root, HANDOFF_DIR, ACCOUNTS_DIR):
        return
    folder = paths.root / HANDOFF_DIR / ACCOUNTS_DIR
    with os.scandir(folder) as found:
        for item in found:
            try:
                if (
                    item.name.endswith(".md")
                    and item.stat(follow_symlinks=False).st_mtime_ns < cutoff_ns
                ):
                    os.unlink(item.path)
            except OSError:
                pass


def _plain_dirs(root: Path, *parts: str) -> bool:
    """True if root/parts… are real folders, none a symlink: nothing is deleted through one."""
    path = root
    for part in parts:
        path = path / part
        if path.is_symlink() or not path.is_dir():
            return False
    return True


def _unlink(path: os.PathLike[str]) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


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
