"""The single writer (I8): the daemon.lock flock, catch-up passes, waiting for the daemon.

Who holds the lock is not who runs as a daemon: the builder the PreCompact hook starts and every
command catching up without a daemon hold it too, for a while. A daemon is what answers on the
state dir's socket (`indexer.daemon.protocol`); a holder without one is waited for, never asked.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from indexer import safefs
from indexer.config import Config, load_config
from indexer.daemon import protocol as daemon_channel
from indexer.errors import IndexBusyError, StateDirError, translate_sqlite_errors
from indexer.fileio import sweep_temp_files
from indexer.index import store
from indexer.index.release import LARGE_PASS_LINES, release_memory
from indexer.index.transactions import transaction
from indexer.ingest.ingestor import Ingestor, IngestStats
from indexer.locks import flock_within, lock_is_held
from indexer.paths import StatePaths
from indexer.queries.porcelain import spool_behind
from indexer.queries.readonly import complete_size, spool_lag, spool_sizes, unwritable_reason
from indexer.retention.spool import prune_quarantine, prune_spool, retention_due
from indexer.spool.tailer import FileState
from indexer.views import update as views

log = logging.getLogger("ctxd.writer")
# One attempt at the writer lock waits this long before looking again for a daemon, or for an
# index that another holder has brought up to date meanwhile.
LOCK_SLICE_S = 0.25


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


@contextlib.contextmanager
def daemon_writer_lock(
    paths: StatePaths, *, wait_s: float, should_stop: Callable[[], bool] | None = None
) -> Iterator[int]:
    """The writer lock as a daemon takes it: waiting (up to `wait_s`, or until `should_stop`)
    while a command or the detached builder holds it, but failing at once when another
    daemon does.

    Raises IndexBusyError naming which of the three it was.
    """
    paths.ensure()
    fd = safefs.open_file(paths.root, paths.lock, os.O_RDWR | os.O_CREAT)
    try:
        deadline = time.monotonic() + wait_s
        waited = False
        while not flock_within(fd, min(LOCK_SLICE_S, max(0.0, deadline - time.monotonic()))):
            if daemon_running(paths):
                raise IndexBusyError(f"another ctxd daemon is running for {paths.root}")
            if should_stop is not None and should_stop():
                raise IndexBusyError("stopped while waiting for the writer lock")
            if time.monotonic() >= deadline:
                raise IndexBusyError(
                    f"{paths.lock} is still held by another ctxd process (not a daemon) after "
                    f"{wait_s:.0f} s; see `ctxd status`, or find it with `fuser {paths.lock}`"
                )
            if not waited:
                waited = True
                log.info("waiting for another ctxd process to finish indexing")
        yield fd
    finally:
        os.close(fd)


def daemon_running(paths: StatePaths) -> bool:
    """True if a daemon runs for this state dir: its request socket accepts a connection."""
    return daemon_channel.is_listening(paths.root)


def is_locked(paths: StatePaths) -> bool:
    """True if some process holds the writer lock now: a daemon, a command catching up, or the
    builder the PreCompact hook starts (`daemon_running` tells a daemon apart)."""
    try:
        return lock_is_held(str(paths.lock))
    except OSError as e:
        raise StateDirError(f"cannot open {paths.lock}: {e.strerror}; check the state dir") from e


@dataclass
class CatchUpResult:
    """What a catch-up did: `stats` of this process's own passes (empty when it waited for
    another process), `by_daemon` if a daemon runs (and did it), `caught_up` if the index
    now covers the spool as it was when the catch-up began, `by_other` if another process
    that is no daemon (a command, the builder started on PreCompact) indexed it meanwhile."""

    stats: IngestStats
    by_daemon: bool
    caught_up: bool
    read_only: str = ""  # why nothing could be indexed: the state dir cannot be written
    by_other: bool = False


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
        with transaction(self.conn):
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
        with transaction(self.conn):
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
    """Make the index current (I12): ingest ourselves, or wait for whoever is ingesting.

    With a daemon running, wait (up to `wait_s`) until its offsets reach the spool sizes seen
    now. Without one, take the writer lock and run passes until the spool is drained; while
    another process holds the lock (a command, the builder started on PreCompact), wait for
    it, up to `wait_s`, or until its passes have indexed the spool as seen now.
    """
    target = spool_target(paths)
    deadline = time.monotonic() + wait_s
    waited = False  # another process held the lock: what it indexed is not in our stats
    while True:
        if daemon_running(paths):
            left = max(0.0, deadline - time.monotonic())
            caught = wait_for_daemon(paths, left, target)
            return CatchUpResult(IngestStats(), by_daemon=True, caught_up=caught)
        read_only = unwritable_reason(paths.root)
        if read_only:  # the index stays as it is: readers answer from it, and say so
            return CatchUpResult(IngestStats(), False, spool_behind(paths) == 0, read_only)
        try:
            slice_s = min(LOCK_SLICE_S, max(0.0, deadline - time.monotonic()))
            with writer_lock(paths, wait_s=slice_s):
                stats = ingest_spool(paths, config)
                by_other = waited and not stats.lines
                return CatchUpResult(stats, by_daemon=False, caught_up=True, by_other=by_other)
        except IndexBusyError:
            waited = True  # held by a process that is no daemon: it may index this very spool
        if index_covers(paths, target):
            return CatchUpResult(IngestStats(), by_daemon=False, caught_up=True, by_other=True)
        if time.monotonic() >= deadline:
            return CatchUpResult(IngestStats(), by_daemon=False, caught_up=False)


@translate_sqlite_errors("catch-up")
def ingest_spool(paths: StatePaths, config: Config | None = None) -> IngestStats:
    """Run passes until the spool is drained, then retention if due (the caller holds the
    writer lock)."""
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
        return total
    finally:
        writer.close()


@translate_sqlite_errors("lag")
def lag(conn: sqlite3.Connection, spool: Path) -> tuple[int, int]:
    """Bytes and complete lines in the spool not yet indexed."""
    return spool_lag(spool, {name: st.offset for name, st in store.active_files(conn).items()})


def spool_target(paths: StatePaths) -> dict[str, int]:
    """The size of every spool segment up to its last complete line, as it is now."""
    target = {
        n: complete_size(paths.spool / n, size) for n, size in spool_sizes(paths.spool).items()
    }
    return {n: size for n, size in target.items() if size}


def index_covers(paths: StatePaths, target: dict[str, int]) -> bool:
    """True if the index's offsets have reached `target` (see spool_target)."""
    if not target:
        return True
    if not paths.index_db.exists():
        return False
    conn = store.connect(paths.index_db, readonly=True)
    try:
        return _covers(conn, target)
    finally:
        conn.close()


def wait_for_daemon(
    paths: StatePaths, wait_s: float, target: dict[str, int] | None = None
) -> bool:
    """Wait until the index covers every complete spool line written before now (or `target`)."""
    target = spool_target(paths) if target is None else target
    deadline = time.monotonic() + wait_s
    # On first use the daemon may not have created index.db yet: wait for it while it runs,
    # rather than report the index as behind (asking the socket twice a second, not each time).
    next_ask = 0.0
    while not paths.index_db.exists():
        if not target:
            return True
        now = time.monotonic()
        if now >= deadline:
            return False
        if now >= next_ask:
            if not daemon_running(paths):
                return False
            next_ask = now + 0.5
        time.sleep(0.02)
    conn = store.connect(paths.index_db, readonly=True)
    try:
        while not _covers(conn, target):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True
    finally:
        conn.close()


def _covers(conn: sqlite3.Connection, target: dict[str, int]) -> bool:
    files = store.active_files(conn)
    return all(n in files and files[n].offset >= size for n, size in target.items())


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino
