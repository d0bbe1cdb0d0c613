"""Scheduled compaction inside `ctxd run`: an APScheduler 3.x interval job plus triggers.

The job runs at start (catch-up after downtime), every `[summarizer] interval_s`, and at once
after every `completions_trigger` agent or feature completions, on PreCompact and SessionEnd,
and when a client asks over the daemon's socket (`compact`, see summarizer.memory.compact),
which is answered once the context files cover the entry it names. A request that arrives
while a run is in progress sets a flag the running job loops on, so it causes exactly one more
run instead of a `max_instances` skip. Compaction writes the index only under the daemon's
`index_lock` (I8) and the scheduler is shut down before the daemon releases its writer lock.
Nothing here polls: the timers (tokenizer release) are one-shot jobs of the same scheduler,
whose thread sleeps until the next of them.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections import OrderedDict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from indexer import history, malloc_trim, release_memory
from summarizer.daemon.run_events import RunEvents
from summarizer.daemon.waiters import Waiters
from summarizer.memory.hooks import AfterCompaction
from summarizer.resume.writer import refresh_after_compaction

if TYPE_CHECKING:
    from indexer import IngestStats
    from summarizer.daemon.channel import Reply
    from summarizer.daemon.host import DaemonHost as Daemon

log = logging.getLogger("ctxd.jobs")

JOB_ID = "compact"
RELEASE_JOB_ID = "release-tokenizer"
TRIM_JOB_ID = "trim-again"
COMPLETION_EVENTS = ("agent_complete", "agent_failed", "subagent_stop", "feature_complete")
IMMEDIATE_EVENTS = ("pre_compact", "session_end")
CATCH_UP_CHECK_S = 0.1  # while a bulk catch-up runs (never at rest)
COMPACTION_CACHE_KIB = 4096
# The tokenizer (~40 MB) is released once no compaction ran for this long: reloading it costs
# ~0.3 s of CPU, too much after every compaction of a busy session, nothing for an idle daemon.
TOKENIZER_IDLE_S = 30.0
_TRIM_AGAIN_S = 1.0
_TIMER_MARGIN_S = 0.5
# The run at start catches up on what was indexed while no daemon ran: no session is waiting
# for the next compaction, so its tokenizer is released at once (the idle daemon's first 30 s
# held 65 MB instead of 45).
STARTUP = "startup"
# Entries whose completion rows are read at a time: after a bulk catch-up of 1,000,000 events
# the range held ~46,000 rows and their details (~20 MB) at once.
BATCH_WINDOW = 20_000
_COUNTED_MAX = 4096  # completions remembered to count an agent once (SubagentStop + PostToolUse)


class CompactionJobs:
    """The daemon's compaction scheduler, its triggers and its clients' requests."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.config = daemon.config
        # Called after each of this daemon's compactions (scheduled, triggered or requested).
        self.after_compaction: list[AfterCompaction] = [refresh_after_compaction]
        self.scheduler: Any = None
        self.runs = 0
        self.skipped = 0  # interval runs skipped: nothing new to compact
        self.run_events = RunEvents(JOB_ID, self._retry_refused)
        self.events = self.run_events.counts  # errors, misses and refusals reported
        self._lock = threading.Lock()
        self._running = False
        self._requested = False
        self._reasons: set[str] = set()
        self._completions = 0
        self._counted: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._seen_id = 0
        self._conn: sqlite3.Connection | None = None
        self._last_run_end = 0.0  # time.monotonic() when the last job ended; 0 = released
        self.tokenizer_idle_s = TOKENIZER_IDLE_S
        self.deferred = 0  # runs that waited for the end of a bulk catch-up
        self._closing = False  # stop() began: no run starts any more
        self._idle = threading.Event()  # set while no run is in progress
        self._idle.set()
        self.waiters = Waiters()  # clients' `compact` requests

    def start(self) -> None:
        """Start the scheduler (first run now), the batch listener and the request handler."""
        from apscheduler.schedulers.background import (  # type: ignore[import-untyped]
            BackgroundScheduler,
        )
        from apscheduler.triggers.interval import IntervalTrigger  # type: ignore[import-untyped]

        from summarizer.memory.compact import published_watermark

        daemon = self.daemon
        if daemon.writer is not None:
            self._seen_id = history.max_entry_id(daemon.writer.conn)
            self.waiters.published = published_watermark(daemon.writer.conn)
        scheduler = BackgroundScheduler(
            timezone=UTC,
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None},
        )
        scheduler.add_listener(self.run_events, self.run_events.mask)
        self._reasons.add(STARTUP)
        scheduler.add_job(
            self._job,
            IntervalTrigger(seconds=self.config.summarizer.interval_s, timezone=UTC),
            id=JOB_ID,
            name="compaction",
            replace_existing=True,
            next_run_time=datetime.now(UTC),
        )
        scheduler.start()
        self.scheduler = scheduler
        daemon.listeners.append(self.on_batch)
        daemon.stop_callbacks.append(self.stop)
        daemon.request_handlers["compact"] = self.on_compact_request
        log.info(
            "compaction scheduled every %.0f s and after every %d completions",
            self.config.summarizer.interval_s,
            self.config.summarizer.completions_trigger,
        )

    def stop(self) -> None:
        """Shut the scheduler down, wait for a running compaction (it stops between batches);
        clients still waiting are told to compact by themselves once the daemon is gone.

        Not `shutdown(wait=True)`: it holds the scheduler's job-store lock while it waits,
        and the running job's last step (setting its timers) takes that lock: a deadlock.
        """
        with self._lock:
            self._closing = True  # a run submitted but not started yet will not start
        scheduler, self.scheduler = self.scheduler, None
        if scheduler is not None:
            try:
                scheduler.shutdown(wait=False)
            except Exception:  # not running (a test that never started it)
                log.debug("scheduler already stopped")
        # No compaction may write the index once the daemon releases its writer lock (I8).
        self._idle.wait()
        self.waiters.answer_all({"ok": False, "retry": True, "error": "the daemon is stopping"})
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # --- requests ------------------------------------------------------------------------------

    def request(self, reason: str) -> None:
        """Compact as soon as possible; during a run, exactly one more run follows it."""
        with self._lock:
            self._reasons.add(reason)
            self._requested = True
            if self._running:
                return  # the running job loops on the flag
        self._start_now(reason)

    def _start_now(self, reason: str) -> None:
        """Have the scheduler run the job now (the reasons are already recorded)."""
        scheduler = self.scheduler
        if scheduler is None:
            return
        try:
            scheduler.modify_job(JOB_ID, next_run_time=datetime.now(UTC))
        except Exception:  # shut down meanwhile (JobLookupError, SchedulerNotRunningError)
            log.debug("compaction request (%s) after shutdown ignored", reason)

    def on_batch(self, _stats: IngestStats) -> None:
        """Daemon batch listener: count completions, spot PreCompact/SessionEnd, request runs."""
        daemon = self.daemon
        if daemon.writer is None:
            return
        conn = daemon.writer.conn  # this runs in the ingest thread, the connection's owner
        top = history.max_entry_id(conn)
        if top <= self._seen_id:
            return
        immediate: dict[str, None] = {}
        for low in range(self._seen_id, top, BATCH_WINDOW):
            rows = history.events_between(
                conn, low, min(top, low + BATCH_WINDOW), (*COMPLETION_EVENTS, *IMMEDIATE_EVENTS)
            )
            for session_id, event, agent_id, detail in rows:
                if event in IMMEDIATE_EVENTS:
                    immediate[str(event)] = None
                    continue
                key = (str(session_id), _completion_key(str(event), str(agent_id), bytes(detail)))
                if key in self._counted:
                    continue
                self._counted[key] = None
                if len(self._counted) > _COUNTED_MAX:
                    self._counted.popitem(last=False)
                self._completions += 1
        self._seen_id = top
        for reason in immediate:
            self.request(reason)
        if self._completions >= self.config.summarizer.completions_trigger:
            self._completions = 0
            self.request("completions")

    def on_compact_request(self, message: dict[str, Any], reply: Reply) -> None:
        """A client's `compact` request (the request thread): answer once the context files
        cover entry `target` (the index's last entry when the client asked)."""
        target = message.get("target")
        if not isinstance(target, int) or isinstance(target, bool) or target < 0:
            reply.send({"ok": False, "error": f"bad target {target!r}"})
        elif self.waiters.add(target, reply):
            self.request("request")

    def _retry_refused(self) -> None:
        """A run refused by max_instances may start now (see summarizer.daemon.run_events)."""
        with self._lock:
            pending = self._requested and not self._running
        if pending:
            self._start_now("retry")  # the refused request's reasons are still recorded

    def _after_run(self, startup: bool) -> None:
        """Timers after a run (job thread): the tokenizer goes once no run followed for
        `tokenizer_idle_s`; after the startup run, memory is handed back once more a second
        later (part of it is freed only after the job has returned to the scheduler: 16 MB
        at 200,000 entries, which the idle timer would otherwise hand back 30 s later)."""
        # A little after the idle time: the scheduler's wall clock may fire a hair early.
        delay_s = self.tokenizer_idle_s + _TIMER_MARGIN_S
        self._at(RELEASE_JOB_ID, delay_s, self._release_tokenizer_when_idle, "tokenizer release")
        if startup:
            self._at(TRIM_JOB_ID, _TRIM_AGAIN_S, _release_tokenizer, "memory release")

    def _at(self, job_id: str, delay_s: float, func: Any, name: str) -> None:
        """Run `func` once, `delay_s` from now, in the scheduler (replacing the last such)."""
        from datetime import timedelta

        scheduler = self.scheduler
        if scheduler is None:
            return
        try:
            scheduler.add_job(
                func,
                "date",
                run_date=datetime.now(UTC) + timedelta(seconds=delay_s),
                id=job_id,
                name=name,
                replace_existing=True,
            )
        except Exception:  # shut down meanwhile (SchedulerNotRunningError)
            log.debug("timer %s after shutdown ignored", job_id)

    # --- the job ---------------------------------------------------------------------------------

    def _job(self) -> None:
        from summarizer.memory.compact import published_watermark

        with self._lock:
            if self._closing:
                return  # submitted before the shutdown: the writer lock may be released next
            self._running = True
            self._idle.clear()
            self._requested = False
            reasons, self._reasons = self._reasons or {"interval"}, set()
        try:
            while True:
                self._compact(",".join(sorted(reasons)))
                assert self._conn is not None
                top = history.max_entry_id(self._conn)
                self.waiters.after_run(published_watermark(self._conn), top)
                with self._lock:
                    if not self._requested or self.daemon.stopping.is_set():
                        self._running = False
                        self._last_run_end = time.monotonic()
                        break
                    self._requested = False
                    reasons, self._reasons = self._reasons or {"request"}, set()
            self._release_cache()
            if reasons == {STARTUP}:
                # No session waits on the startup run; the idle timer still runs for what a
                # session duty may load meanwhile.
                _release_tokenizer()
            self._after_run(startup=reasons == {STARTUP})
        except BaseException as e:
            with self._lock:
                self._running = False
            # A client waiting on this run learns it failed (APScheduler logs the traceback).
            self.waiters.answer_all({"ok": False, "error": f"{type(e).__name__}; see the log"})
            raise
        finally:
            self._idle.set()

    def _compact(self, trigger: str) -> None:
        from summarizer.memory.compact import compact_and_publish, published_watermark

        self._wait_for_catch_up()
        if self._conn is None:
            self._conn = history.connect(self.daemon.paths.index_db)
            # Compaction reads entries in id order: a small page cache serves it as well, and
            # the daemon's memory stays bounded while ingest keeps its own larger cache.
            history.set_cache_size(self._conn, COMPACTION_CACHE_KIB)
        if trigger == "interval" and published_watermark(self._conn) >= history.max_entry_id(
            self._conn
        ):
            self.skipped += 1  # nothing new since the last publication: no tokenizer, no writes
            return
        compact_and_publish(
            self._conn,
            self.daemon.paths,
            self.config,
            trigger=trigger,
            lock=self.daemon.index_lock,
            should_stop=self.daemon.stopping.is_set,
            after=self.after_compaction,
        )
        self.runs += 1

    def _wait_for_catch_up(self) -> None:
        """Let a bulk catch-up finish first: its page cache and batches and the tokenizer
        together would double the daemon's peak memory, and a compaction in the middle of a
        backlog would only cover part of it (the run after the catch-up covers it all)."""
        daemon = self.daemon
        if not daemon.catching_up.is_set():
            return
        self.deferred += 1
        log.info("compaction waits until the spool backlog being ingested is indexed")
        _release_tokenizer()  # a tokenizer kept from an earlier run would sit idle meanwhile
        while daemon.catching_up.is_set() and not daemon.stopping.wait(CATCH_UP_CHECK_S):
            pass

    def _release_cache(self) -> None:
        """After a run: the compaction's page cache is not needed until the next one."""
        if self._conn is not None:
            try:
                release_memory(self._conn)
            except Exception:
                log.exception("releasing memory after a compaction failed")

    def _release_tokenizer_when_idle(self) -> None:
        """Release the tokenizer once no compaction ran for `tokenizer_idle_s` (a timer)."""
        with self._lock:
            idle = (
                not self._running
                and self._last_run_end > 0
                and time.monotonic() - self._last_run_end >= self.tokenizer_idle_s
            )
            if not idle:
                return
            self._last_run_end = 0.0
        _release_tokenizer()


def _release_tokenizer() -> None:
    """Drop the token counters and hand their memory back to the system."""
    import gc

    from summarizer.common.tokens import release_counters

    release_counters()
    gc.collect()  # a counter still held in a reference cycle is freed now, not at some later GC
    malloc_trim()


def _completion_key(event: str, agent_id: str, detail: bytes) -> str:
    if event != "feature_complete":
        return f"agent:{agent_id}"
    import json

    try:
        record = json.loads(detail) if detail else {}
    except ValueError:
        record = {}
    feature = record.get("id", "") if isinstance(record, dict) else ""
    return f"feature:{feature}"


def start_jobs(daemon: Daemon) -> CompactionJobs:
    """Start the compaction scheduler of a started daemon (called from its on_start)."""
    jobs = CompactionJobs(daemon)
    jobs.start()
    return jobs
