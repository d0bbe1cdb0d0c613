"""An import whose lines a prepare worker converts and prepares ahead of the writer, or not."""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

from indexer.ingest.ahead import WORKER_MIN_BATCHES
from indexer.ingest.worker import PrepareWorker, WorkerFailedError
from indexer.transcripts.prepare import Converted
from indexer.writer.importer import FileRun, ImportStats, Step, TranscriptImporter

__all__ = ["ImportAhead", "core_is_idle", "import_files"]

log = logging.getLogger("ctxd.import")

# Batches sent to the worker before the writer waits for the first one's result: two smooth
# out batches that take one process longer than the other.
_DEPTH = 2
# How long the CPU use of the machine is sampled to tell whether a core is idle.
_SAMPLE_S = 0.05
# A core counts as idle for the worker when at least this share of one went unused in the
# sample besides a whole core for the import itself (which is not running while it samples).
_IDLE_SHARE = 0.8


def import_files(
    importer: TranscriptImporter,
    paths: list[Path],
    progress: Callable[[int], None] | None = None,
    *,
    worker: str = "auto",
) -> ImportStats:
    """Import what is new in `paths`, in order; `worker` ("auto", "on" or "off") says whether
    a prepare worker may convert and prepare the lines ahead of the writer."""
    enough = WORKER_MIN_BATCHES * importer.config.batch_bytes
    # Sampled only when the import is large enough: a re-run with little new reads in process.
    large = worker != "off" and importer.pending_bytes(paths) >= enough
    if large and (worker == "on" or core_is_idle()):
        total = ImportAhead(importer).run(paths, progress)
    else:
        total = ImportStats()
        for path in paths:
            total.add(importer.import_file(path, progress))
    # Events older than what the views hold (a backfill): put in order once, at the end.
    importer.writer.sort_views()
    return total


def core_is_idle() -> bool:
    """True if a CPU core was idle just now besides the one the import will use (from
    /proc/stat; else the load average): the worker only pays when it has a core of its own."""
    cores = os.cpu_count() or 1
    if cores < 2:
        return False
    try:
        first = _cpu_times()
        time.sleep(_SAMPLE_S)
        second = _cpu_times()
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0] <= cores - 2
    total = sum(second) - sum(first)
    idle = (second[3] + second[4]) - (first[3] + first[4])  # idle and iowait
    return total > 0 and idle / total * cores >= 1 + _IDLE_SHARE


def _cpu_times() -> list[int]:
    with open("/proc/stat", "rb") as f:
        fields = f.readline().split()
    if fields[0] != b"cpu":
        raise ValueError("no cpu line")
    return [int(v) for v in fields[1:9]]


class ImportAhead:
    """Runs an import's files through a prepare worker: the worker holds each file's converter
    and prepares the next two batches while the writer stores one. Files start in process
    until the worker is ready. Any failure of the worker is logged once; the writer then
    rebuilds the converter of each unfinished file and reads the rest in process (nothing
    stored twice)."""

    def __init__(self, importer: TranscriptImporter) -> None:
        self.importer = importer
        self.worker: PrepareWorker | None = None
        self.runs: list[FileRun] = []  # opened, not finished
        self.ahead: deque[tuple[FileRun, Step | None]] = deque()  # None: the run's end
        self._announced: FileRun | None = None  # the run whose lines the worker converts
        self._batches = 0  # batch steps in `ahead`

    def run(self, paths: list[Path], progress: Callable[[int], None] | None) -> ImportStats:
        """Import `paths` in order; return what was done."""
        total = ImportStats()
        files = iter(paths)
        try:
            self._start()
            steps = self._steps(files, total)
            try:
                self._pipeline(steps, total, progress)
            except WorkerFailedError as e:
                self._failed(e)
                steps.close()
                for run in list(self.runs):
                    self.importer.resume(run)
                    self._finish(run, total, progress)
            for path in files:  # what remains after a failure
                total.add(self.importer.import_file(path, progress))
            return total
        finally:
            self._stop()
            for run in self.runs:
                os.close(run.fd)

    def _start(self) -> None:
        try:
            self.worker = PrepareWorker(self.importer.config)
            log.info("prepare worker started (pid %d) for the import", self.worker.pid)
        except (OSError, WorkerFailedError) as e:
            log.warning("cannot start the prepare worker (%s); importing in this process", e)

    def _stop(self) -> None:
        worker, self.worker = self.worker, None
        if worker is not None:
            worker.close()

    def _failed(self, e: WorkerFailedError) -> None:
        pid = self.worker.pid if self.worker is not None else 0
        log.warning(
            "the prepare worker (pid %d) %s; the import reads the rest in this process", pid, e
        )
        self._stop()
        self.ahead.clear()
        self._batches = 0

    def _steps(
        self, files: Iterator[Path], total: ImportStats
    ) -> Generator[tuple[FileRun, Step | None]]:
        """Every file's batches in order, each file opened when its first batch is wanted; a
        file goes to the worker only if the worker is ready by then."""
        for path in files:
            stats, run = self.importer.open_run(path)
            if run is None:
                total.add(stats)
                continue
            self.runs.append(run)
            if not self._worker_ready():
                run.converter = self.importer.new_converter(run)
            for step in self.importer.steps(run, run.pos, run.line_no):
                yield run, step
            yield run, None

    def _worker_ready(self) -> bool:
        return self.worker is not None and self.worker.poll_ready()

    def _pipeline(
        self,
        steps: Iterator[tuple[FileRun, Step | None]],
        total: ImportStats,
        progress: Callable[[int], None] | None,
    ) -> None:
        importer, ahead = self.importer, self.ahead
        while ahead or self._pull(steps):
            run, step = ahead.popleft()
            if step is None:
                self._finish(run, total, progress)
            elif step.chunk is None:
                importer.oversize(run, step)
            else:
                self._batches -= 1
                converted = self._result(run, step)
                self._pull(steps)  # the next batches go to the worker before this one is stored
                if converted is None:
                    converted = importer.prepare(run, step)
                importer.store(run, step, converted)

    def _pull(self, steps: Iterator[tuple[FileRun, Step | None]]) -> bool:
        """Take steps until `_DEPTH` batches are ahead, sending each batch to the worker if
        its file is there; False once there are none left."""
        if self._batches >= _DEPTH:
            return True
        for run, step in steps:
            self.ahead.append((run, step))
            if step is not None and step.chunk is not None:
                if run.converter is None:
                    self._send(run, step)
                self._batches += 1
                if self._batches >= _DEPTH:
                    return True
        return bool(self.ahead)

    def _send(self, run: FileRun, step: Step) -> None:
        worker = self.worker
        if worker is None:
            raise WorkerFailedError("is gone")
        if self._announced is not run:
            worker.open_transcript(str(run.path), run.agent_type, is_live=run.is_live)
            self._announced = run
        assert step.chunk is not None
        chunk = memoryview(step.chunk)[: step.consumed]
        worker.submit_transcript(run.state.file_id, step.pos, step.line_no, chunk)

    def _result(self, run: FileRun, step: Step) -> Converted | None:
        """The worker's result for a batch of a file it converts (None: prepare in process)."""
        if run.converter is not None:
            return None
        worker = self.worker
        if worker is None:
            raise WorkerFailedError("is gone")
        return worker.converted(step.pos, step.pos + step.consumed, step.line_no, step.lines)

    def _finish(
        self, run: FileRun, total: ImportStats, progress: Callable[[int], None] | None
    ) -> None:
        self.runs.remove(run)
        os.close(run.fd)
        total.add(run.stats)
        if progress is not None:
            progress(run.size - run.start[0])
