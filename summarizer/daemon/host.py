"""What the daemon's jobs may use of the daemon: a protocol, so they never import it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from indexer import Config, IndexWriter, IngestStats, StatePaths

if TYPE_CHECKING:
    from summarizer.daemon.channel import RequestHandler

BatchListener = Callable[[IngestStats], None]


class DaemonHost(Protocol):
    """The attributes of `summarizer.daemon.service.Daemon` the jobs read or append to."""

    paths: StatePaths
    config: Config
    stopping: threading.Event
    catching_up: threading.Event
    index_lock: threading.Lock
    listeners: list[BatchListener]
    stop_callbacks: list[Callable[[], None]]
    request_handlers: dict[str, RequestHandler]
    writer: IndexWriter | None
