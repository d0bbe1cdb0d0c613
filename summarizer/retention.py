"""Retention: delete spool segments fully indexed and old; optionally prune old index entries."""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from indexer import store, view_rebuild
from indexer.config import Config
from indexer.paths import StatePaths, is_valid_session_id
from indexer.tailer import Action, FileState, decide, observe

if TYPE_CHECKING:
    from summarizer.daemon import Daemon

__all__ = [
    "RetentionReport",
    "prune_index",
    "prune_spool",
    "run_retention",
    "start_retention_job",
]

log = logging.getLogger("ctxd.retention")
_FIRST_RUN_DELAY_S = 60.0


@dataclass
class RetentionReport:
    """What one retention run deleted (and kept, with why)."""

    segments_deleted: list[str] = field(default_factory=list)
    segments_kept_unindexed: list[str] = field(default_factory=list)
    entries_deleted: int = 0
    sessions_deleted: int = 0


def prune_spool(
    conn: sqlite3.Connection, paths: StatePaths, spool_hours: float, now: float | None = None
) -> RetentionReport:
    """Delete segments older than `spool_hours` whose every byte is indexed.

    The caller must hold the writer lock (the daemon's index lock): then the offsets read here
    cannot move. Each segment is deleted under its own append flock after re-checking that it
    is still exactly as indexed, so a hook appending at that moment either lands before (and
    the segment is kept) or reopens a fresh segment after the unlink (hook.append_line).
    """
    report = RetentionReport()
    cutoff = (now if now is not None else time.time()) - spool_hours * 3600
    known = store.active_files(conn)
    try:
        names = sorted(n for n in os.listdir(paths.spool) if n.endswith(".jsonl"))
    except FileNotFoundError:
        return report
    for name in names:
        path = paths.spool / name
        try:
            fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            if os.fstat(fd).st_mtime > cutoff:
                continue
            fcntl.flock(fd, fcntl.LOCK_EX)
            if not _fully_indexed(fd, known.get(name)):
                report.segments_kept_unindexed.append(name)
                continue
            if os.stat(path, follow_symlinks=False).st_ino != os.fstat(fd).st_ino:
                continue  # replaced meanwhile: not the file that was indexed
            # Retire first: a segment that vanishes while still tracked is reported as lost.
            store.retire_file(conn, known[name].file_id)
            os.unlink(path)
            report.segments_deleted.append(name)
        except OSError as e:
            log.warning("retention: cannot check or delete %s: %s", path, e)
        finally:
            os.close(fd)
    return report


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
    gone = [
        str(r[0])
        for r in conn.execute("SELECT session_id FROM sessions WHERE last_ns<?", (cutoff_ns,))
    ]
    with store.transaction(conn):
        entries = conn.execute("DELETE FROM entries WHERE ts_ns<?", (cutoff_ns,)).rowcount
        for sid in gone:
            for table in ("sessions", "agents", "agent_aliases", "dirty_views"):
                conn.execute(f"DELETE FROM {table} WHERE session_id=?", (sid,))
        conn.execute("DELETE FROM quarantine WHERE ts_ns<?", (cutoff_ns,))
        if entries or gone:
            view_rebuild.request(conn)
    if entries or gone:
        with store.transaction(conn):
            view_rebuild.rebuild(conn, paths)
    for sid in gone:
        if is_valid_session_id(sid):
            for folder in (paths.sessions / sid, paths.resume / sid):
                shutil.rmtree(folder, ignore_errors=True)
    return int(entries), len(gone)


def run_retention(
    conn: sqlite3.Connection, paths: StatePaths, config: Config, now: float | None = None
) -> RetentionReport:
    """One retention pass: spool first, then the index (if `[retention] index_days` > 0)."""
    report = prune_spool(conn, paths, config.retention.spool_hours, now)
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


def _fully_indexed(fd: int, stored: FileState | None) -> bool:
    if stored is None:
        return False
    seen = observe(fd, stored.offset)
    return decide(stored, seen) is Action.CONTINUE and seen.size == stored.offset
