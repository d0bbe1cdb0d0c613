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
    (meta `key`) it returns, so each entry is dealt with once across restarts."""

    def __init__(self, daemon: Daemon, key: str, duty: Duty) -> None:
        self.daemon = daemon
        self.key = key
        self.duty = duty

    def __call__(self, _stats: IngestStats | None = None) -> None:
        daemon = self.daemon
        with daemon.index_lock:
            if daemon.writer is None:
                return
            conn = daemon.writer.conn
            after = int(history.get_meta(conn, self.key, "0") or 0)
            top = self.duty(conn, after)
            if top != after:
                with history.transaction(conn):
                    history.set_meta(conn, self.key, str(top))
