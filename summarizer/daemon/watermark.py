"""A daemon batch listener that runs one duty over the entries after its own watermark."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING

from indexer import IngestStats, history

if TYPE_CHECKING:
    from summarizer.daemon.host import DaemonHost as Daemon

# duty(conn, after) -> the last entry id it has dealt with (`after` when nothing is done, or
# when it failed and the next batch should retry).
Duty = Callable[[sqlite3.Connection, int], int]


class WatermarkListener:
    """Runs `duty` after every ingest batch, under the index lock, and commits the watermark
    (meta `key`) it returns, so each entry is dealt with once across restarts.

    A call without lines (`None` at start, or the daemon's call at the end of a bulk catch-up)
    always runs the duty.
    """

    def __init__(
        self, daemon: Daemon, key: str, duty: Duty, *, waits_for_catch_up: bool = False
    ) -> None:
        self.daemon = daemon
        self.key = key
        self.duty = duty
        # A duty that loads the tokenizer skips the batches of a bulk catch-up: the daemon calls
        # its listeners once more, with no lines, when the catch-up ends, and the watermark
        # (not advanced meanwhile) makes that call cover them all.
        self.waits_for_catch_up = waits_for_catch_up
        self.deferred = 0  # batches skipped during a bulk catch-up

    def __call__(self, stats: IngestStats | None = None) -> None:
        daemon = self.daemon
        deferrable = self.waits_for_catch_up and stats is not None and bool(stats.lines)
        if deferrable and daemon.catching_up.is_set():
            self.deferred += 1
            return
        with daemon.index_lock:
            if daemon.writer is None:
                return
            conn = daemon.writer.conn
            after = int(history.get_meta(conn, self.key, "0") or 0)
            top = self.duty(conn, after)
            if top != after:
                with history.transaction(conn):
                    history.set_meta(conn, self.key, str(top))
