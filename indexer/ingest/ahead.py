"""The prepare worker of one ingest pass, kept one batch ahead of the writer, and its fallback."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from indexer.config import IngestConfig
from indexer.ingest.worker import PrepareWorker, WorkerFailedError
from indexer.prepare.line import Prepared
from indexer.spool.lines import RawLine

__all__ = ["WORKER_MIN_BATCHES", "PrepareAhead"]

log = logging.getLogger("ctxd.ingest")

# A pass with less to read than this many batches prepares in process: starting the worker
# (a Python process importing the ingest code) costs about what preparing a few batches does,
# and an idle daemon must have no child.
WORKER_MIN_BATCHES = 16

# (the chunk read, its complete lines, the bytes they take) of the batch at an offset
ReadLines = Callable[[int], tuple[bytes, list[RawLine], int]]


class PrepareAhead:
    """Sends the batch after the one being stored to a worker process, and hands its result
    back when the writer reaches it. Any failure of the worker is logged once and ends its
    use for the pass: the writer then prepares every batch itself (`take` returns None)."""

    def __init__(self, cfg: IngestConfig) -> None:
        self.cfg = cfg
        self.worker: PrepareWorker | None = None
        self._sent: tuple[int, list[RawLine], int] | None = None  # offset, lines, consumed

    @property
    def is_holding(self) -> bool:
        """True while a batch sent to the worker has not been taken back."""
        return self._sent is not None

    def start(self, spool: Path, names: list[str], offsets: dict[str, int]) -> None:
        """Start a worker if enabled and the spool holds enough unread bytes to pay for it."""
        if not self.cfg.prepare_worker:
            return
        backlog = 0
        for name in names:
            try:
                size = os.stat(spool / name).st_size
            except OSError:
                continue
            offset = offsets.get(name, 0)
            backlog += size - offset if offset <= size else size
        if backlog < WORKER_MIN_BATCHES * self.cfg.batch_bytes:
            return
        try:
            self.worker = PrepareWorker(self.cfg)
            log.info(
                "prepare worker started (pid %d) for %.1f MB of spool",
                self.worker.pid,
                backlog / 1e6,
            )
        except (OSError, WorkerFailedError) as e:
            log.warning("cannot start the prepare worker (%s); preparing in this process", e)
            self.stop()

    def stop(self) -> None:
        """Stop and reap the worker (at the end of every pass, and on any failure)."""
        worker, self.worker, self._sent = self.worker, None, None
        if worker is not None:
            worker.close()

    def send(self, file_id: int, offset: int, line_no: int, read: ReadLines) -> None:
        """Send the batch at `offset` (after line `line_no`) if the worker is up and idle."""
        self._sent = None
        worker = self.worker
        if worker is None:
            return
        try:
            if not worker.poll_ready():
                return  # still starting: the writer prepares in process meanwhile
            chunk, lines, consumed = read(offset)
            if lines:
                worker.submit(file_id, line_no, lines, memoryview(chunk)[:consumed])
                self._sent = (offset, lines, consumed)
        except WorkerFailedError as e:
            self._failed(e)

    def take(
        self, offset: int, line_no: int
    ) -> tuple[list[RawLine], int, list[Prepared | None] | None] | None:
        """The batch sent for `offset`: its lines, their bytes, and the worker's results (None
        if the worker failed: prepare them in process). None if no batch was sent for it."""
        sent, self._sent = self._sent, None
        if sent is None or self.worker is None:
            return None
        at, lines, consumed = sent
        if at != offset:  # not the batch the writer reads next: drop the worker's answer
            self.stop()
            return None
        try:
            return lines, consumed, self.worker.result(lines, line_no)
        except WorkerFailedError as e:
            self._failed(e)
            return lines, consumed, None

    def _failed(self, e: WorkerFailedError) -> None:
        pid = self.worker.pid if self.worker is not None else 0
        log.warning(
            "the prepare worker (pid %d) %s; this pass prepares the rest in this process", pid, e
        )
        self.stop()
