"""Spool and quarantine retention that needs no daemon: run by the writer after ingest passes."""

from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from indexer import safefs
from indexer.errors import StateDirError
from indexer.index import store
from indexer.index.transactions import transaction
from indexer.paths import StatePaths
from indexer.spool.tailer import Action, FileState, decide, observe

__all__ = [
    "RetentionReport",
    "delete_segment",
    "fully_indexed",
    "prune_quarantine",
    "prune_spool",
    "retention_due",
]

log = logging.getLogger("ctxd.retention")


@dataclass
class RetentionReport:
    """What one retention run deleted (and kept, with why)."""

    segments_deleted: list[str] = field(default_factory=list)
    segments_kept_unindexed: list[str] = field(default_factory=list)
    segments_rewritten: list[str] = field(default_factory=list)  # some lines taken out
    lines_removed: int = 0
    entries_deleted: int = 0
    sessions_deleted: int = 0
    quarantined_deleted: int = 0


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

    def is_old(fd: int) -> bool:
        return os.fstat(fd).st_mtime <= cutoff

    for name in names:
        delete_segment(conn, paths, name, known.get(name), report, is_old)
    return report


def delete_segment(
    conn: sqlite3.Connection,
    paths: StatePaths,
    name: str,
    stored: FileState | None,
    report: RetentionReport,
    wanted: Callable[[int], bool],
) -> None:
    """Delete one spool segment if `wanted(fd)` and every byte of it is indexed (the caller
    holds the writer lock), under the segment's append flock; record what was done."""
    path = paths.spool / name
    try:
        # The segment is opened, checked and unlinked relative to the spool's fd: a spool
        # swapped for a symlink meanwhile is refused, nothing outside it is deleted.
        spool_fd = safefs.open_dir(paths.root, paths.spool, create=False)
    except (OSError, StateDirError) as e:
        log.warning("retention: cannot open %s: %s", paths.spool, e)
        return
    try:
        fd = os.open(name, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=spool_fd)
    except OSError:
        os.close(spool_fd)
        return
    try:
        if not wanted(fd):
            return
        fcntl.flock(fd, fcntl.LOCK_EX)
        if not fully_indexed(fd, stored):
            report.segments_kept_unindexed.append(name)
            return
        if os.stat(name, dir_fd=spool_fd, follow_symlinks=False).st_ino != os.fstat(fd).st_ino:
            return  # replaced meanwhile: not the file that was indexed
        if stored is not None:
            # Retire first: a segment that vanishes while still tracked is reported as lost.
            store.retire_file(conn, stored.file_id)
        os.unlink(name, dir_fd=spool_fd)
        report.segments_deleted.append(name)
    except OSError as e:
        log.warning("retention: cannot check or delete %s: %s", path, e)
    finally:
        os.close(fd)
        os.close(spool_fd)


def retention_due(conn: sqlite3.Connection, interval_s: float, now: float) -> bool:
    """True (and the run recorded) if no retention ran in the last `interval_s`."""
    last = float(store.get_meta(conn, "retention_ns", "0")) / 1e9
    if now - last < interval_s:
        return False
    with transaction(conn):
        store.set_meta(conn, "retention_ns", str(int(now * 1e9)))
    return True


def prune_quarantine(
    conn: sqlite3.Connection, quarantine_days: float, now: float | None = None
) -> int:
    """Delete quarantined lines older than `quarantine_days` (0 = keep them); return how many."""
    if quarantine_days <= 0:
        return 0
    cutoff_ns = int(((now if now is not None else time.time()) - quarantine_days * 86400) * 1e9)
    with transaction(conn):
        return int(conn.execute("DELETE FROM quarantine WHERE ts_ns<?", (cutoff_ns,)).rowcount)


def fully_indexed(fd: int, stored: FileState | None) -> bool:
    """True if the open segment is the file `stored` describes, read to its last byte."""
    if stored is None:
        return False
    seen = observe(fd, stored.offset)
    return decide(stored, seen) is Action.CONTINUE and seen.size == stored.offset
