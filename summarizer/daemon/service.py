"""The daemon loop (`ctxd run`): watchdog wake-ups, a rescan that guarantees progress, signals.

watchdog only wakes the loop (I7): inotify coalesces and drops events and an exception in a
handler kills its dispatcher thread, so a stat rescan is what guarantees progress, and a dead
observer is restarted (or polling alone carries on). The rescan runs every
`rescan_interval_s` while events come and backs off to `rescan_idle_interval_s` at rest; a
notification still wakes the loop at once. Requests (`ctxd compact`, `ctxd start`'s check)
come over the state dir's socket (summarizer.daemon.channel), signals through a self-pipe
(summarizer.daemon.wakeup): the idle daemon sleeps until one of them, or the next rescan.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from indexer import (
    LARGE_PASS_LINES,
    SOCKET_NAME,
    WRITER_CACHE_KIB,
    Config,
    CtxdError,
    IndexWriter,
    IngestStats,
    SpoolSnapshot,
    StateDirError,
    StatePaths,
    daemon_channel,
    daemon_writer_lock,
    has_unread,
    history,
    lag,
    open_writer,
    query,
    release_memory,
    safefs,
    snapshot,
    sweep_temp_files,
    unread_bytes,
    write_atomic,
)
from summarizer.daemon.channel import RequestHandler, RequestServer
from summarizer.daemon.host import BatchListener
from summarizer.daemon.logfile import setup_logging
from summarizer.daemon.wakeup import Wakeup
from summarizer.daemon.watcher import WAKE_EVENTS, SpoolWatcher

__all__ = ["WAKE_EVENTS", "Daemon", "SpoolWatcher", "setup_logging"]

log = logging.getLogger("ctxd.daemon")

ACTIVE_WINDOW_S = 1.0
ACTIVE_POLL_S = 0.01
# A backlog at least this large (~6,000 events) is a bulk catch-up: compactions wait for its
# end, so that the tokenizer is not loaded beside the ingest's page cache and batches.
BULK_BACKLOG_BYTES = 16 << 20
LISTENER_CACHE_KIB = 2048
# How long a starting daemon waits for a command or the builder started on PreCompact to
# release the writer lock (another daemon holding it is an error at once).
LOCK_WAIT_S = 120.0


@dataclass
class _SpoolState:
    """What the loop remembers of the spool between rescans."""

    last_seen: SpoolSnapshot | None = None  # the spool as the last pass saw it
    unread: bool = True  # bytes past an offset remain (a partial line): passes must go on
    progressed: bool = False  # the last pass indexed lines
    failures: int = 0  # passes failed in a row


class Daemon:
    """Owns the writer lock for its lifetime; ingests, writes views, runs jobs."""

    def __init__(self, paths: StatePaths, config: Config) -> None:
        self.paths = paths
        self.config = config
        self.wake = Wakeup()
        self.stopping = threading.Event()
        self.index_lock = threading.Lock()  # ingest and jobs never write the index at once (I8)
        self.listeners: list[BatchListener] = []
        # Called before the writer lock is released (the scheduler finishes its jobs there, so
        # no compaction writes the index after another process could take the lock: I8).
        self.stop_callbacks: list[Callable[[], None]] = []
        # Requests by op name, served once on_start has returned (see summarizer.daemon.channel).
        self.request_handlers: dict[str, RequestHandler] = {}
        self.started = time.time()
        self.last_stats = IngestStats()
        self.writer: IndexWriter | None = None
        # Counters in daemon.json: an idle daemon's passes must stay within what the rescan
        # interval allows (a busy loop shows here first).
        self.passes = 0
        self.skipped = 0
        self.last_lines_at = 0.0  # wall time of the last pass that indexed lines
        self.catching_up = threading.Event()  # set while a bulk backlog is being ingested
        self._stop_asked = False  # set by request_stop, or by a signal handler (a plain store)
        self._signal: int | None = None
        self._error_logged = False
        self._listener: daemon_channel.Listener | None = None
        self._server: RequestServer | None = None

    def request_stop(self) -> None:
        """Stop after the current batch (from any thread; not from a signal handler)."""
        self._stop_asked = True
        self.stopping.set()
        self.wake.set()

    def on_signal(self, signum: int) -> None:
        """A signal handler's whole work: record it, wake the loop. No lock, no log (see
        summarizer.daemon.wakeup); the loop logs it and sets `stopping`."""
        self._signal = signum
        self._stop_asked = True
        self.wake.set()

    def stop_requested(self) -> bool:
        """True once a stop was asked for, even before the loop has seen it (ingest checks
        this between batches)."""
        return self._stop_asked or self.stopping.is_set()

    def run(self, on_start: Callable[[Daemon], None] | None = None) -> int:
        """Run until SIGTERM/SIGINT or `request_stop`; return the exit code.

        An error that stops it is logged (with its traceback) before it propagates.
        """
        try:
            with daemon_writer_lock(
                self.paths, wait_s=LOCK_WAIT_S, should_stop=self.stop_requested
            ):
                self._run_locked(on_start)
        except CtxdError as e:
            if self.writer is None and self.stop_requested():
                log.info("stopped before it started (%s)", e)
                return 0
            if not self._error_logged:
                log.error("the daemon cannot run: %s", e)
            raise
        finally:
            self.wake.close()
        return 0

    def _run_locked(self, on_start: Callable[[Daemon], None] | None) -> None:
        # Listening from the start: clients know a daemon runs (and queue their requests)
        # while it starts; they are served once its jobs have registered their handlers.
        self._listener = daemon_channel.listen(self.paths.root)
        watcher = SpoolWatcher(str(self.paths.spool), self.wake)
        try:
            swept = sweep_temp_files(self.paths.root)
            if swept:
                log.info("removed %d stale temp files", swept)
            self.writer = open_writer(self.paths, self.config)
            self.writer.ingestor.should_stop = self.stop_requested
            self.writer.start()
            watcher.start()
            self._heartbeat()
            if on_start is not None:
                on_start(self)
            self._serve_requests()
            log.info("daemon started (pid %d)", os.getpid())
            self._loop(watcher)
        except Exception as e:
            self._error_logged = True
            if isinstance(e, CtxdError):
                log.error("the daemon stopped: %s", e)
            else:
                # Redacted by the log's formatter, the traceback included.
                log.exception("the daemon stopped on an error: %s: %s", type(e).__name__, e)
            raise
        finally:
            self.stopping.set()  # every thread waiting on it ends
            if self._server is not None:
                self._server.stop()
            # From here clients find no daemon and wait for the writer lock instead.
            if self._listener is not None:
                daemon_channel.close_listener(self.paths.root, self._listener)
            for callback in self.stop_callbacks:
                try:
                    callback()
                except Exception:
                    log.exception("stop callback failed")
            watcher.stop()
            if self.writer is not None:
                self.writer.close()
            try:
                safefs.unlink(self.paths.root, self.paths.daemon_json)
            except (OSError, StateDirError):
                log.exception("cannot remove %s", self.paths.daemon_json)
            log.info("daemon stopped")

    def _serve_requests(self) -> None:
        assert self._listener is not None
        identity = {"pid": os.getpid(), "started": self.started}
        self._server = RequestServer(self._listener, self.request_handlers, identity)
        self._server.start()

    def _keep_listening(self) -> None:
        """Listen again if `daemon.sock` was removed or replaced: clients would find no
        daemon, wait for the writer lock this daemon holds, and give up."""
        assert self._listener is not None
        if daemon_channel.is_bound(self.paths.root, self._listener):
            return
        log.warning("%s was removed or replaced; listening on a new one", SOCKET_NAME)
        if self._server is not None:
            self._server.stop()
        self._listener.sock.close()  # not unlinked: the name is not ours any more
        try:
            self._listener = daemon_channel.listen(self.paths.root)
        except (OSError, CtxdError):
            log.exception("cannot listen on %s; retrying at the next heartbeat", SOCKET_NAME)
            return  # is_bound stays false: the next heartbeat tries again
        self._serve_requests()

    def _stop_seen(self) -> bool:
        """The loop's check: log a signal the handler recorded, and set `stopping`."""
        if self._stop_asked and not self.stopping.is_set():
            if self._signal is not None:
                log.info("signal %d received: finishing the current batch", self._signal)
            self.stopping.set()
        return self.stopping.is_set()

    def _loop(self, watcher: SpoolWatcher) -> None:
        cfg = self.config.daemon
        active_s = cfg.rescan_interval_s
        rest_s = max(active_s, cfg.rescan_idle_interval_s)
        rescan_s = active_s  # doubles after each rescan that finds nothing, up to rest_s
        now = time.monotonic()
        next_rescan, next_beat = now, now + cfg.heartbeat_interval_s
        spool = _SpoolState()
        last_lines = 0.0  # time.monotonic() of the last pass that indexed lines
        woken = True
        slack = 0.0
        while not self._stop_seen() and not self._index_gone():
            lines = 0
            if woken or time.monotonic() >= next_rescan:
                outcome = self._rescan(spool)
                if outcome is None:  # the pass failed: try again after a back-off
                    woken = self.wake.wait(min(30.0, 0.5 * 2**spool.failures))
                    continue
                lines, changed = outcome
                # Polling alone (no notifications) stays at the short interval.
                quiet = not lines and not changed and not watcher.polling_only
                rescan_s = min(rest_s, rescan_s * 2) if quiet else active_s
                next_rescan = time.monotonic() + rescan_s
            # Early or late by up to half an interval: at rest the heartbeat shares the
            # rescan's wake-up instead of waking the daemon a second time.
            slack = min(rescan_s, cfg.heartbeat_interval_s) / 2
            if time.monotonic() >= next_beat - slack:
                watcher.check()
                self._keep_listening()
                self._heartbeat()
                next_beat = time.monotonic() + cfg.heartbeat_interval_s
            if lines and not self.stop_requested():
                last_lines = time.monotonic()
                woken = True
                continue  # more may be waiting: drain before sleeping
            now = time.monotonic()
            if now - last_lines < ACTIVE_WINDOW_S:
                # Right after new lines, more usually follow: rescan (stat only) at a short
                # interval for a moment instead of relying on notifications alone.
                next_rescan = min(next_rescan, now + ACTIVE_POLL_S)
            woken = self.wake.wait(max(0.0, min(next_rescan, next_beat + slack) - now))

    def _index_gone(self) -> bool:
        """Stop if index.db was deleted or replaced: SQLite would go on writing to the inode
        it opened, which nobody reads any more."""
        assert self.writer is not None
        replaced = self.writer.index_replaced()
        if replaced:
            log.error(
                "%s while the daemon ran; stopping. The next ctxd command re-indexes the "
                "spool into the current index (`ctxd start` to run the daemon again)",
                replaced,
            )
            self.stopping.set()
        return bool(replaced)

    def _rescan(self, spool: _SpoolState) -> tuple[int, bool] | None:
        """Stat the spool and run a pass if anything changed; (lines indexed, whether the
        spool changed since the last pass), or None if the pass failed (logged)."""
        assert self.writer is not None
        self.wake.clear()  # what the snapshot below sees needs no second wake-up
        seen = snapshot(self.paths.spool)
        stats = IngestStats()
        ending = False  # a bulk catch-up ends with this pass
        changed = seen != spool.last_seen
        if not changed and not spool.unread:
            self.skipped += 1  # nothing new: a few stat calls instead of a pass
            ending = True
        else:
            try:
                with self.index_lock:
                    # A backlog that does not shrink (a huge partial line waiting for its
                    # end) is no catch-up: compactions must not wait for it forever.
                    bulk = unread_bytes(seen, self._offsets()) >= BULK_BACKLOG_BYTES
                    if bulk and (changed or spool.progressed):
                        self.catching_up.set()
                    else:
                        ending = True  # cleared after the duties that waited for it
                    stats = self.writer.pass_once()
                    self.passes += 1
                    spool.progressed = bool(stats.lines)
                    # Offsets are read only when the pass found no line to index.
                    spool.unread = bool(stats.lines) or has_unread(seen, self._offsets())
                spool.failures = 0
            except Exception:
                spool.failures += 1
                log.exception("ingest pass failed (%d in a row); retrying", spool.failures)
                return None
            spool.last_seen = seen
        if stats.lines:
            self.last_stats = stats
            self.last_lines_at = time.time()
            self._call_listeners(stats, stats.lines >= LARGE_PASS_LINES)
        if ending:
            self._end_catch_up()
        return stats.lines, changed

    def _call_listeners(self, stats: IngestStats, large: bool) -> None:
        large = large and bool(self.listeners)
        if large:
            # After a bulk catch-up the listeners read many new entries, and may load the
            # tokenizer meanwhile: a small page cache serves their reads as well, and keeps
            # the writer's cache out of that peak.
            self._cache_kib(LISTENER_CACHE_KIB)
        for listener in self.listeners:
            try:
                listener(stats)
            except Exception:
                log.exception("batch listener failed")
        if large:
            self._cache_kib(WRITER_CACHE_KIB)

    def _end_catch_up(self) -> None:
        """A bulk catch-up ended: call the listeners once more, with no lines, so that the
        duties that skipped its batches run now, then let the waiting compactions go (after
        them: each loads the tokenizer, and they never hold their memory at once)."""
        if not self.catching_up.is_set():
            return
        if not self.stopping.is_set():  # else the next start's first call covers them
            self._call_listeners(IngestStats(), large=True)
        self.catching_up.clear()

    def _cache_kib(self, kib: int) -> None:
        """Resize the writer's page cache, returning what it held to the system."""
        assert self.writer is not None
        with self.index_lock:
            history.set_cache_size(self.writer.conn, kib)
            release_memory(self.writer.conn)

    def _offsets(self) -> dict[str, int]:
        assert self.writer is not None
        return query.active_offsets(self.writer.conn)

    def _heartbeat(self) -> None:
        assert self.writer is not None
        try:
            lag_bytes, lag_lines = lag(self.writer.conn, self.paths.spool)
            info = {
                "pid": os.getpid(),
                "started": self.started,
                "heartbeat": time.time(),
                "lag_bytes": lag_bytes,
                "lag_lines": lag_lines,
                "entries": history.max_entry_id(self.writer.conn),
                "passes": self.passes,
                "skipped": self.skipped,
                "last_lines_at": self.last_lines_at,
            }
            write_atomic(self.paths.daemon_json, json.dumps(info).encode(), root=self.paths.root)
        except Exception:
            log.exception("heartbeat failed")
