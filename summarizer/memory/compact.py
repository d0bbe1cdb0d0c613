"""Compaction entry points: in process under the writer lock, or asked of the daemon (I8).

`ctxd compact`, `ContextAgent.summarize()` and `get_injection()` call `compact_now()`, with the
callbacks to run after a compaction done here (`after`: other features' refresh). When a
daemon runs (its socket answers: indexer.daemon.protocol), a second writer is not allowed (I8):
it waits until the daemon has indexed the spool, asks it to compact over the socket, and waits
for its answer, sent once the context files cover every entry indexed at the time of the
request (meta `mem.published`). Without a daemon it takes `daemon.lock`, catches the index up
and compacts itself; while another process holds the lock (a command, or the builder the
PreCompact hook starts) it waits for it, within the same time limit. A daemon runs its own
callbacks after its compactions.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from indexer import (
    LOCK_SLICE_S,
    Config,
    CtxdError,
    IndexBusyError,
    StatePaths,
    daemon_channel,
    daemon_running,
    history,
    ingest_spool,
    iso_utc,
    search_index,
    wait_for_daemon,
    writer_lock,
)
from summarizer.common.tokens import get_counter
from summarizer.memory.backend import backend_for
from summarizer.memory.hooks import AfterCompaction
from summarizer.memory.reader import count_new, load_memory
from summarizer.memory.store import CompactStats, compact
from summarizer.memory.summary import Published, publish

log = logging.getLogger("ctxd.compact")

# Connecting is immediate when a daemon listens; this bounds a full request queue.
_CONNECT_S = 2.0


class CompactionTimeout(CtxdError):
    """The daemon did not publish a compaction in time, or the index stayed locked."""


class CompactionFailed(CtxdError):
    """The daemon's compaction failed (its log says why)."""


@dataclass
class CompactionResult:
    """What a compaction did, here or in the daemon."""

    by_daemon: bool
    watermark: int
    new_decisions: int = 0
    new_failures: int = 0
    stats: CompactStats = field(default_factory=CompactStats)
    published: Published | None = None


def published_watermark(conn: sqlite3.Connection) -> int:
    """The entry id the context files cover (0 before the first publication)."""
    return int(history.get_meta(conn, "mem.published", "0") or 0)


def compact_and_publish(
    conn: sqlite3.Connection,
    paths: StatePaths,
    config: Config,
    *,
    trigger: str,
    lock: AbstractContextManager[Any] | None = None,
    should_stop: Any = None,
    after: Sequence[AfterCompaction] = (),
) -> CompactionResult:
    """Compact new entries, write the context files, record the time, call `after`.

    The caller holds the writer flock; `lock` (the daemon's index lock) is taken around each
    index write so that ingest and compaction never write at once, and only then: reading,
    tokenizing and writing files happen outside it.
    """
    cfg = config.summarizer
    counter = get_counter(cfg.encoding)
    guard = lock if lock is not None else contextlib.nullcontext()
    before = published_watermark(conn)
    stats = compact(conn, cfg, lock=lock, should_stop=should_stop)
    memory = load_memory(conn, cfg)
    result = publish(
        conn, paths, memory, cfg, counter, trigger=trigger, backend=backend_for(cfg, counter)
    )
    with guard, history.transaction(conn):
        history.set_meta(conn, "mem.published", str(memory.watermark))
        history.set_meta(conn, "last_compaction", iso_utc(time.time_ns()))
        history.set_meta(conn, "last_compaction_trigger", trigger)
    # The callbacks only read the index (and tokenize, and write their own files under their
    # own locks): outside the index lock, so ingest passes go on meanwhile.
    run_after_compaction(conn, paths, config, after)
    # Ingest has caught up: a few bounded steps keep the search index in few segments.
    search_index.merge_segments(conn, lock=guard, should_stop=should_stop)
    try:
        from summarizer.memory.injection import prebuild_injection

        prebuild_injection(conn, paths, config, memory, result.summary, counter)
    except Exception:  # only a cache: `ctxd inject` computes what is missing
        log.exception("keeping the default injection failed")
    new_d, new_f = count_new(conn, before)
    log.info(
        "compaction (%s): %d entries in %.3f s, watermark %d, +%d decisions, +%d failures",
        trigger,
        stats.entries,
        stats.seconds,
        memory.watermark,
        new_d,
        new_f,
    )
    return CompactionResult(False, memory.watermark, new_d, new_f, stats, result)


def run_after_compaction(
    conn: sqlite3.Connection, paths: StatePaths, config: Config, after: Sequence[AfterCompaction]
) -> None:
    """Call every callback of `after`; a failing one is logged and the others still run."""
    for callback in tuple(after):  # the daemon's list may change while a callback runs
        try:
            callback(conn, paths, config)
        except Exception:
            log.exception("after-compaction callback %r failed", callback)


def compact_now(
    paths: StatePaths,
    config: Config,
    *,
    trigger: str,
    wait_s: float | None = None,
    after: Sequence[AfterCompaction] = (),
) -> CompactionResult:
    """Bring the index and the memory up to date, here or by asking the daemon (see module doc).

    `after` runs after a compaction done in this process; a daemon runs its own callbacks.

    Raises CompactionTimeout when a running daemon does not index or compact within `wait_s`
    (default `[summarizer] request_timeout_s`), or when another process keeps the writer lock
    that long; CompactionFailed when the daemon's compaction fails.
    """
    timeout = config.summarizer.request_timeout_s if wait_s is None else wait_s
    deadline = time.monotonic() + timeout
    while True:
        if daemon_running(paths):
            result = _ask_daemon(paths, timeout, deadline)
            if result is not None:
                return result
            # The daemon stopped meanwhile: it answered that, or closed. Compact here.
        try:
            slice_s = min(LOCK_SLICE_S, max(0.0, deadline - time.monotonic()))
            with writer_lock(paths, wait_s=slice_s):
                ingest_spool(paths, config)
                conn = history.connect(paths.index_db)
                try:
                    return compact_and_publish(conn, paths, config, trigger=trigger, after=after)
                finally:
                    conn.close()
        except IndexBusyError:
            pass  # a command or the builder started on PreCompact: wait for it, or a daemon
        if time.monotonic() >= deadline:
            raise CompactionTimeout(
                f"another ctxd process kept the index locked for {timeout:.0f} s (a command, "
                "or the notes being built after a compaction); try again, or raise "
                "[summarizer] request_timeout_s"
            )


def _ask_daemon(paths: StatePaths, timeout: float, deadline: float) -> CompactionResult | None:
    """Wait for the running daemon to index the spool, then ask it to compact (None if it
    stopped meanwhile)."""
    if not wait_for_daemon(paths, max(0.0, deadline - time.monotonic())):
        if not daemon_running(paths):
            return None
        raise CompactionTimeout(
            f"the daemon did not index the spool within {timeout:.0f} s; see {paths.log}"
        )
    return request_compaction(paths, timeout_s=max(0.0, deadline - time.monotonic()))


def request_compaction(paths: StatePaths, *, timeout_s: float) -> CompactionResult | None:
    """Ask the running daemon to compact; wait until it has published everything indexed now.

    None when no daemon took the request (none runs, or it stopped before answering).
    """
    if not paths.index_db.exists():
        return CompactionResult(True, 0)
    conn = history.connect(paths.index_db, readonly=True)
    try:
        before = published_watermark(conn)
        target = history.max_entry_id(conn)
        if before < target:
            reply = _request(paths, target, timeout_s, conn)
            if reply is None:
                return None
        new_d, new_f = count_new(conn, before)
        return CompactionResult(True, published_watermark(conn), new_d, new_f)
    finally:
        conn.close()


def _request(
    paths: StatePaths, target: int, timeout_s: float, conn: sqlite3.Connection
) -> dict[str, Any] | None:
    """Send `compact` for entry `target` and wait for the daemon's answer (see above)."""
    sock = daemon_channel.connect(paths.root, max(timeout_s, _CONNECT_S))
    if sock is None:
        return None
    try:
        daemon_channel.send(sock, {"op": "compact", "target": target})
        reply = daemon_channel.receive(sock, timeout_s)
    except TimeoutError:
        raise CompactionTimeout(
            f"the daemon did not publish a compaction within {timeout_s:.0f} s "
            f"(index at entry {target}, context files at {published_watermark(conn)});"
            f" see {paths.log} or raise [summarizer] request_timeout_s"
        ) from None
    except OSError:
        return None  # it went away mid-request
    finally:
        sock.close()
    if reply is None or (not reply.get("ok") and reply.get("retry")):
        return None
    if not reply.get("ok"):
        raise CompactionFailed(
            f"the daemon's compaction failed ({reply.get('error')}); see {paths.log}"
        )
    return reply
