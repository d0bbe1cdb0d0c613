"""Shipping to the team store inside `ctxd run`: a thread of its own, woken by committed batches.

It reads what ingest committed through its own read-only connection and never takes the
index lock, so ingest never waits for it (I8). While the database is unreachable it retries
after a delay that doubles up to `[team] retry_max_s`, with jitter (a fleet that lost its
database does not come back in lockstep); local indexing goes on and `ctxd status` and
`ctxd doctor` show the error until a pass succeeds.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from indexer import CtxdError, IngestStats
from summarizer.team.identity import TeamSettings
from summarizer.team.state import record_failure

if TYPE_CHECKING:
    from summarizer.daemon.host import DaemonHost as Daemon
    from summarizer.team.shipper import Shipper

__all__ = ["TeamShipping", "retry_delay", "start_team_shipping"]

log = logging.getLogger("ctxd.team")

# Without a wake-up, the local index is looked at this often (deletions and compactions
# wake nobody); a look costs a few SQLite reads, no database round trip.
IDLE_CHECK_S = 2.0
# The team's notes for new sessions (`[team] startup`) are fetched again this often.
NOTES_REFRESH_S = 60.0


def retry_delay(failures: int, cap_s: float, rand: Callable[[], float] = random.random) -> float:
    """Seconds to wait after `failures` failed attempts in a row: 1, 2, 4, … up to `cap_s`,
    each drawn between half and all of that (pure, given `rand`)."""
    ceiling = min(cap_s, 2.0 ** min(max(failures - 1, 0), 30))
    return ceiling * (0.5 + 0.5 * rand())


class TeamShipping:
    """The daemon's shipping thread."""

    def __init__(self, daemon: Daemon, settings: TeamSettings) -> None:
        self.daemon = daemon
        self.settings = settings
        self.wake = threading.Event()
        self.thread: threading.Thread | None = None
        self.failures = 0
        self.passes = 0
        self._last_error = ""
        self._notes_at = 0.0

    def start(self) -> None:
        """Start the thread; committed batches wake it."""
        self.daemon.listeners.append(self.on_batch)
        self.daemon.stop_callbacks.append(self.stop)
        self.thread = threading.Thread(target=self._run, name="ctxd-team", daemon=True)
        self.thread.start()

    def on_batch(self, _stats: IngestStats) -> None:
        """Batch listener (ingest thread): new entries are committed, ship them."""
        self.wake.set()

    def stop(self) -> None:
        """Let the thread finish its transaction (the daemon is stopping), then return."""
        self.wake.set()
        if self.thread is not None:
            self.thread.join(timeout=15)

    def _run(self) -> None:
        from summarizer.team.shipper import Shipper

        stopping = self.daemon.stopping
        shipper: Shipper | None = None
        try:
            while not stopping.is_set():
                try:
                    if shipper is None:
                        shipper = Shipper(self.daemon.paths, self.daemon.config, self.settings.dsn)
                        log.info(
                            "shipping to the team store as machine %s, project %s",
                            shipper.who.machine_id,
                            shipper.who.project,
                        )
                    if shipper.pending():
                        shipper.ship(should_stop=stopping.is_set)
                        self.passes += 1
                    self._refresh_notes(shipper)
                    if self.failures:
                        log.info("the team store is reachable again; shipping resumed")
                    self.failures, self._last_error = 0, ""
                except Exception as e:
                    self._failed(e, shipper)
                    continue
                self.wake.wait(IDLE_CHECK_S)
                self.wake.clear()
        finally:
            if shipper is not None:
                shipper.close()

    def _failed(self, error: Exception, shipper: Shipper | None) -> None:
        self.failures += 1
        delay = retry_delay(self.failures, self.daemon.config.team.retry_max_s)
        message = str(error) if isinstance(error, CtxdError) else f"{type(error).__name__}: {error}"
        record_failure(self.daemon.paths, message, delay)
        if shipper is not None:
            shipper.drop_connection()
        if message != self._last_error:
            if isinstance(error, CtxdError):
                log.warning("team store: %s; indexing goes on, retrying in %.0f s", message, delay)
            else:
                log.exception("team shipping failed; retrying in %.0f s", delay)
        self._last_error = message
        self.daemon.stopping.wait(delay)

    def _refresh_notes(self, shipper: Shipper) -> None:
        """Keep the team's decisions and constraints for new sessions (`[team] startup`)."""
        if not self.daemon.config.team.startup:
            return
        now = time.monotonic()
        if self._notes_at and now - self._notes_at < NOTES_REFRESH_S:
            return
        from summarizer.team.notes import refresh_startup_notes

        refresh_startup_notes(
            self.daemon.paths, self.daemon.config, shipper.connection(), shipper.who
        )
        self._notes_at = now


def start_team_shipping(daemon: Daemon) -> TeamShipping | None:
    """Start shipping if the team store is configured (`[team] dsn` or CTXD_TEAM_DSN)."""
    from summarizer.team.identity import settings

    team = settings(daemon.config)
    if not team.enabled:
        return None
    job = TeamShipping(daemon, team)
    job.start()
    return job
