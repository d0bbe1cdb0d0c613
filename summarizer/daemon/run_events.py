"""APScheduler's reports on the compaction job: counted, logged, and a refused run retried.

A run ends (the job's own `running` flag false) a moment before APScheduler counts its
instance finished; a request in that window is refused by `max_instances`. The instance count
is followed here from the scheduler's events, and whichever of the refusal and the end of the
count is reported last asks for the run again, under one lock, so neither can miss the other.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("ctxd.jobs")


class RunEvents:
    """The listener of one job's events; `retry` is called when a refused run may start."""

    def __init__(self, job_id: str, retry: Callable[[], None]) -> None:
        from apscheduler.events import (  # type: ignore[import-untyped]
            EVENT_JOB_ERROR,
            EVENT_JOB_EXECUTED,
            EVENT_JOB_MAX_INSTANCES,
            EVENT_JOB_MISSED,
            EVENT_JOB_SUBMITTED,
        )

        self.job_id = job_id
        self.retry = retry
        self.counts: dict[str, int] = {"error": 0, "missed": 0, "max_instances": 0}
        self.mask = (
            EVENT_JOB_ERROR
            | EVENT_JOB_EXECUTED
            | EVENT_JOB_MISSED
            | EVENT_JOB_MAX_INSTANCES
            | EVENT_JOB_SUBMITTED
        )
        self._codes = (EVENT_JOB_SUBMITTED, EVENT_JOB_MAX_INSTANCES, EVENT_JOB_MISSED)
        self._error = EVENT_JOB_ERROR
        self._lock = threading.Lock()
        self._instances = 0  # runs APScheduler counts as started and not finished
        self._refused = False

    def __call__(self, event: Any) -> None:
        if event.job_id != self.job_id:
            return  # a timer
        submitted, refused, missed = self._codes
        if event.code == missed:
            self.counts["missed"] += 1
            log.warning("compaction run of %s was missed", event.scheduled_run_time)
            return
        if event.code == self._error:
            self.counts["error"] += 1
            # APScheduler logs the traceback itself (logger apscheduler.executors.default).
            log.error("compaction job failed: %r; the next run retries", event.exception)
        elif event.code == refused:
            self.counts["max_instances"] += 1
            log.info("compaction run refused: the last one is still finishing; retried")
        with self._lock:
            if event.code == submitted:
                self._instances += 1
                return
            if event.code == refused:
                self._refused = True
            else:  # executed or failed: no longer counted
                self._instances = max(0, self._instances - 1)
            retry = self._refused and self._instances == 0
            if retry:
                self._refused = False
        if retry:
            self.retry()
