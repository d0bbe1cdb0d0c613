"""The single writer (I8): the daemon.lock flock, catch-up passes, waiting for the daemon."""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from indexer import safefs, store, views
from indexer.cli_queries import spool_behind
from indexer.config import Config, load_config
from indexer.errors import IndexBusyError, StateDirError, translate_sqlite_errors
from indexer.fileio import sweep_temp_files
from indexer.ingest import Ingestor, IngestStats
from indexer.locks import flock_within, lock_is_held
from indexer.paths import StatePaths
from indexer.readonly import complete_size, spool_lag, spool_sizes, unwritable_reason
from indexer.release import LARGE_PASS_LINES, release_memory
from indexer.spool_retention import prune_quarantine, prune_spool, retention_due
from indexer.tailer import FileState

log = logging.getLogger("ctxd.writer")


@contextlib.contextmanager
def writer_lock(paths: StatePaths, *, wait_s: float = 0.0) -> Iterator[int]:
    """Hold `daemon.lock` exclusively (flock; released by the kernel even on kill -9).

    Raises IndexBusyError if another process still holds it after `wait_s` seconds.
    """
    paths.ensure()
    fd = safefs.open_file(paths.root, paths.lock, os.O_RDWR | os.O_CREAT)
    try:
        if not flock_within(fd, wait_s):
            raise IndexBusyError(
                f"{paths.lock} is held by another ctxd process (a running daemon?)"
            )
        yield fd
    finally:
        os.close(fd)


def is_locked(paths: StatePaths) -> bool:
    """True if some process (normally the daemon) holds the writer lock now."""
    try:
        return lock_is_held(str(paths.lock))
    except OSError as e:
        raise StateDirError(f"cannot open {paths.lock}: {e.strerror}; check the state dir") from e


@dataclass
class CatchUpResult:
    """What a catch-up did, and whether this process did it or waited for the daemon."""

    stats: IngestStats
    by_daemon: bool
    caught_up: bool
    read_only: str = ""  # why nothing could be indexed: the state dir cannot be written


class IndexWriter:
    """Ingest + views for the process holding the writer lock."""

    def __init__(self, paths: StatePaths, config: Config, conn: sqlite3.Connection) -> None:
        self.paths = paths
        self.conn = conn
        self.ingestor = Ingestor(paths, config, conn)
        self.ingestor.on_batch = self._write_views
        self.views = views.ViewWriter(paths)
        self._identity = _file_identity(paths.index_db)

    def index_replaced(self) -> str:
        """Why the open index is no longer the file at index.db ("" while it still is).

        SQLite keeps writing to the inode it opened: after a delete or a replace, every entry
        would go to a file nobody reads any more.
        """
        now = _file_identity(self.paths.index_db)
        if now is None:
            return f"{self.paths.index_db} was deleted"
        if now != self._identity:
            return f"{self.paths.index_db} was replaced by another file"
        return ""

    def start(self) -> int:
        """Startup duties: sweep stale temp files, bring views level with the index (and in
        order, if a kill came before a pass could order them)."""
        sweep_temp_files(self.paths.root)
        with store.transaction(self.conn):
            written = views.catch_up(self.conn, self.views)
        return written + self.sort_views()

    def sort_views(self) -> int:
        """Put the views a pass gave older events than their newest back in event-time order
        (at the end of a pass or an import: once, however many batches did it)."""
        return views.sort_pending(self.conn, self.views)

    def prune(self, now: float | None = None) -> None:
        """Spool and quarantine retention at the end of an ingest, at most once per
        `[retention] interval_s`: without a daemon raw payloads would otherwise stay forever."""
        now = time.time() if now is None else now
        cfg = self.ingestor.config.retention
        if retention_due(self.conn, cfg.interval_s, now):
            prune_spool(self.conn, self.paths, cfg.spool_hours, now)
            prune_quarantine(self.conn, cfg.quarantine_days, now)

    def close(self) -> None:
        """Close the view files and the index connection."""
        self.views.close()
        self.conn.close()

    def pass_once(self) -> IngestStats:
        """One ingest pass over the spool, writing the views of each batch as it commits."""
        stats = self.ingestor.run_once()
        if stats.inserted or stats.anomalies:
            self._write_views(stats)
        self.sort_views()
        if stats.lines >= LARGE_PASS_LINES:
            release_memory(self.conn)
        return stats

    def pass_file(self, name: str) -> FileState | None:
        """One ingest pass over the spool segment `name` alone, with its views; how far the
        index has read that segment now (None if it is not tracked)."""
        stats = self.ingestor.run_file(name)
        if stats.inserted or stats.anomalies:
            self._write_views(stats)
        return store.active_files(self.conn).get(name)

    def _write_views(self, batch: IngestStats) -> None:
        with store.transaction(self.conn):
            views.catch_up(self.conn, self.views, batch.inserted)
        batch.inserted.clear()
        # After a committed batch: a long catch-up must not keep every session it met.
        self.ingestor.registry.shed()


def open_writer(paths: StatePaths, config: Config | None = None) -> IndexWriter:
    """Open the index for writing (caller must hold the writer lock)."""
    paths.ensure()
    cfg = config if config is not None else load_config(paths.config)
    return IndexWriter(paths, cfg, store.connect(paths.index_db))


@translate_sqlite_errors("catch-up")
def catch_up(
    paths: StatePaths, config: Config | None = None, *, wait_s: float = 5.0
) -> CatchUpResult:
    """Make the index current (I12): ingest ourselves, or wait for the running daemon.

    If no daemon holds the lock, take it briefly and run passes until the spool is drained.
    Otherwise wait (up to `wait_s`) until the daemon's offsets reach the spool sizes seen now.
    """
    if not is_locked(paths):
        read_only = unwritable_reason(paths.root)
        if read_only:  # the index stays as it is: readers answer from it, and say so
            return CatchUpResult(IngestStats(), False, spool_behind(paths) == 0, read_only)
        try:
            with writer_lock(paths, wait_s=0.5):
                writer = open_writer(paths, config)
                try:
                    writer.start()
                    total = IngestStats()
                    while True:
                        stats = writer.pass_once()
                        total.add(stats)
                        if not stats.lines:
                            break
                    writer.prune()
                    return CatchUpResult(total, by_daemon=False, caught_up=True)
                finally:
                    writer.close()
        except IndexBusyError:
            log.debug("a daemon took the writer lock meanwhile; waiting for it instead")
    return CatchUpResult(IngestStats(), by_daemon=True, caught_up=wait_for_daemon(paths, wait_s))


@translate_sqlite_errors("lag")
def lag(conn: sqlite3.Connection, spool: Path) -> tuple[int, int]:
    """Bytes and complete lines in the spool not yet indexed."""
    return spool_lag(spool, {name: st.offset for name, st in store.active_files(conn).items()})


def wait_for_daemon(paths: StatePaths, wait_s: float) -> bool:
    """Wait until the index covers every complete spool line written before now."""
    target = {
        n: complete_size(paths.spool / n, size) for n, size in spool_sizes(paths.spool).items()
    }
    target = {n: size for n, size in target.items() if size}
    deadline = time.monotonic() + wait_s
    # On first use the lock holder may not have created index.db yet: wait for it while the
    # lock is held, rather than report the index as behind.
    while not paths.index_db.exists():
        if not target:
            return True
        if time.monotonic() >= deadline or not is_locked(paths):
            return False
        time.sleep(0.02)
    conn = store.connect(paths.index_db, readonly=True)
    try:
        while True:
            files = store.active_files(conn)
            behind = [n for n, size in target.items() if n not in files or files[n].offset < size]
            if not behind:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
    finally:
        conn.close()


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino
