"""One catch-up pass over the spool: read, redact, decode, normalize, attribute, commit (I3-I6)."""

from __future__ import annotations

import calendar
import logging
import os
import sqlite3
import time
from collections.abc import Callable

from indexer.config import Config
from indexer.index import store
from indexer.index.transactions import transaction
from indexer.ingest.ahead import PrepareAhead
from indexer.ingest.attribution import AgentRegistry
from indexer.ingest.batch_store import quarantine_line, store_batch
from indexer.ingest.lines import Batch, IngestStats, guarded_line, guarded_take
from indexer.paths import StatePaths
from indexer.prepare.line import Prepared, oversize_error
from indexer.spool.lines import RawLine, is_segment_name, split_lines
from indexer.spool.tailer import (
    Action,
    FileState,
    advanced,
    decide,
    marker_for,
    next_newline,
    observe,
    read_chunk,
)

# The writer and the daemon take both from here, the module that produces them.
__all__ = ["IngestStats", "Ingestor"]

log = logging.getLogger("ctxd.ingest")


class Ingestor:
    """Tails every spool segment into the index. Only the writer-lock holder may use it (I8)."""

    def __init__(self, paths: StatePaths, config: Config, conn: sqlite3.Connection) -> None:
        self.paths = paths
        self.config = config
        self.conn = conn
        self.registry = AgentRegistry(conn)
        self.keep_inserted = True  # the caller writes views from the inserted entries
        # Called after every committed batch: the writer writes that batch's views and clears
        # `inserted`, so a pass over a large spool never holds more than one batch of entries.
        self.on_batch: Callable[[IngestStats], None] | None = None
        # Asked between batches (each commits its offset, I3): a daemon told to stop in the
        # middle of a long catch-up stops within one batch instead of at the end of the pass.
        self.should_stop: Callable[[], bool] | None = None
        # A catch-up pass over a large backlog prepares lines in a worker process while this
        # one stores the batch before.
        self.ahead = PrepareAhead(config.ingest)

    def run_once(self, now: float | None = None) -> IngestStats:
        """Index everything complete in the spool now; return what was done."""
        total = IngestStats()
        try:
            names = sorted(n for n in os.listdir(self.paths.spool) if n.endswith(".jsonl"))
        except FileNotFoundError:
            return total
        known = store.active_files(self.conn)
        self.ahead.start(self.paths.spool, names, {n: s.offset for n, s in known.items()})
        try:
            for name in names:
                if self._stopping():
                    break
                total.add(self._ingest_file(name, known.get(name), now or time.time()))
        finally:
            self.ahead.stop()
        gone = set(known) - set(names)
        if gone:
            missing = self._missing(gone, known)
            total.anomalies += len(missing)
            with transaction(self.conn):
                for name in gone:
                    store.retire_file(self.conn, known[name].file_id)
                if missing:
                    store.bump_counter(self.conn, "anomaly.missing", len(missing))
        if total.lines or gone:
            with transaction(self.conn):
                store.set_meta(self.conn, "last_ingest_ns", str(time.time_ns()))
        return total

    def run_file(self, name: str, now: float | None = None) -> IngestStats:
        """Index what is complete in the one segment `name` now (`ctxd forget` does it
        while it holds the segment's append lock, before taking lines out of it)."""
        stored = store.active_files(self.conn).get(name)
        return self._ingest_file(name, stored, now or time.time())

    def _missing(self, gone: set[str], known: dict[str, FileState]) -> list[str]:
        """Segments that vanished while still tracked: not deleted by retention (which retires
        a segment before it unlinks it), and not renamed to another name in the spool."""
        present: set[tuple[int, int]] = set()
        try:
            with os.scandir(self.paths.spool) as it:
                for d in it:
                    try:
                        st = d.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    present.add((st.st_dev, st.st_ino))
        except OSError:
            pass
        missing = sorted(n for n in gone if (known[n].dev, known[n].ino) not in present)
        for name in missing:
            log.warning(
                "spool segment %s disappeared before it was retired (indexed up to offset %d);"
                " any events written after that offset are lost",
                name,
                known[name].offset,
            )
        return missing

    # --- one file ---------------------------------------------------------------------------

    def _ingest_file(self, name: str, stored: FileState | None, now: float) -> IngestStats:
        stats = IngestStats()
        path = self.paths.spool / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return stats
        except OSError as e:
            log.warning("cannot open spool segment %s: %s", path, e)
            return stats
        try:
            seen = observe(fd, stored.offset if stored else 0)
            action = decide(stored, seen)
            state = stored
            if action is not Action.CONTINUE or state is None:
                if action is not Action.NEW:
                    stats.anomalies += 1
                    log.warning(
                        "spool segment %s was %s (offset %d, size %d); re-reading it from 0, "
                        "duplicates are absorbed by the event ids",
                        name,
                        action.value,
                        stored.offset if stored else 0,
                        seen.size,
                    )
                with transaction(self.conn):
                    state = store.new_file(
                        self.conn, name, seen.dev, seen.ino, action.value, time.time_ns()
                    )
                    if action is not Action.NEW:
                        store.bump_counter(self.conn, f"anomaly.{action.value}")
            while state.offset < seen.size:
                state, batch, done = self._read_batch(fd, state, seen.size, now)
                if self.on_batch is not None and batch.inserted:
                    self.on_batch(batch)
                stats.add(batch)
                if done or self._stopping():
                    break
            return stats
        finally:
            if self.ahead.is_holding:  # stopped (or failed) with a batch sent ahead
                self.ahead.stop()
            os.close(fd)

    def _stopping(self) -> bool:
        return self.should_stop is not None and self.should_stop()

    def _read_batch(
        self, fd: int, state: FileState, size: int, now: float
    ) -> tuple[FileState, IngestStats, bool]:
        cfg = self.config.ingest
        prepared: list[Prepared | None] | None = None
        taken = self.ahead.take(state.offset, state.line_no)
        if taken is not None:
            lines, consumed, prepared = taken
        else:
            chunk, lines, consumed = self._read_lines(fd, state.offset, size)
            if not lines:
                return self._tail_without_newline(fd, state, size, chunk, now)
        # The worker prepares the next batch while this one is prepared (if it was not sent)
        # and stored.
        if state.offset + consumed < size and not self._stopping():
            self.ahead.send(
                state.file_id,
                state.offset + consumed,
                state.line_no + len(lines),
                lambda offset: self._read_lines(fd, offset, size),
            )
        batch = Batch(state)
        try:
            with transaction(self.conn):
                line_no = state.line_no
                for i, raw in enumerate(lines):
                    line_no += 1
                    p = prepared[i] if prepared is not None else None
                    if p is None:
                        guarded_line(batch, raw, line_no, cfg, self.registry)
                    else:
                        guarded_take(batch, p, self.registry, raw.data)
                self._store(batch)
                self.registry.flush()
                state = advanced(state, fd, state.offset + consumed, line_no)
                store.save_file(self.conn, state)
        except BaseException:
            self.registry.reset()
            raise
        batch.stats.bytes = consumed
        return state, batch.stats, False

    def _read_lines(self, fd: int, offset: int, size: int) -> tuple[bytes, list[RawLine], int]:
        """The next batch's complete lines from `offset`: the chunk read, the lines, and the
        bytes they take (b"\n" included)."""
        cfg = self.config.ingest
        chunk = read_chunk(fd, offset, size, cfg.batch_bytes, cfg.max_line_bytes)
        lines, consumed = split_lines(chunk, offset)
        if len(lines) > cfg.batch_lines:
            lines = lines[: cfg.batch_lines]
            consumed = lines[-1].offset + len(lines[-1].data) + 1 - offset
        return chunk, lines, consumed

    def _tail_without_newline(
        self, fd: int, state: FileState, size: int, chunk: bytes, now: float
    ) -> tuple[FileState, IngestStats, bool]:
        """A chunk with no b"\\n": an oversize line, or a partial last line (I4)."""
        stats = IngestStats()
        cfg = self.config.ingest
        if len(chunk) >= cfg.max_line_bytes:
            end = next_newline(fd, state.offset + len(chunk), size)
            if end < 0:
                return state, stats, True  # still being written; look again later
            error = oversize_error(end - state.offset)
            return self._skip_to(fd, state, end + 1, chunk, error, stats), stats, False
        pending = size - state.offset
        if state.partial_size != pending:
            # First sight of this tail (or it grew): remember when, not yet written (I4).
            with transaction(self.conn):
                state = _replace_partial(state, now, pending)
                store.save_file(self.conn, state)
            return state, stats, True
        if now - state.partial_since < cfg.partial_grace_s or not self._is_sealed(state.name, now):
            return state, stats, True
        error = f"partial last line unchanged for {cfg.partial_grace_s:.0f}s in a sealed segment"
        return self._skip_to(fd, state, size, chunk, error, stats), stats, False

    def _skip_to(
        self, fd: int, state: FileState, end: int, chunk: bytes, error: str, stats: IngestStats
    ) -> FileState:
        start = state.offset  # the log names where the skipped line starts, not where it ends
        with transaction(self.conn):
            quarantine_line(
                self.conn, state, start, state.line_no + 1, error, chunk, time.time_ns()
            )
            state = FileState(
                state.file_id,
                state.name,
                state.dev,
                state.ino,
                state.head_len,
                state.head_hash,
                end,
                marker_for(fd, end),
                state.line_no + 1,
            )
            store.save_file(self.conn, state)
        stats.quarantined += 1
        stats.lines += 1
        log.warning("quarantined %s at offset %d: %s", state.name, start, error)
        return state

    def _is_sealed(self, name: str, now: float) -> bool:
        if not is_segment_name(name):
            return True  # not an hour segment: no writer appends to it by name
        try:
            hour_start = calendar.timegm(time.strptime(name[:11], "%Y%m%dT%H"))
        except ValueError:
            return True  # digits that are no date (month 13): no hook writes that name
        return now >= hour_start + 3600

    def store_batch(self, batch: Batch) -> None:
        """Store a batch built outside the spool (the transcript import), inside the caller's
        transaction."""
        self._store(batch)

    def _store(self, batch: Batch) -> None:
        store_batch(self.conn, self.registry, batch, keep_inserted=self.keep_inserted)


def _replace_partial(state: FileState, now: float, pending: int) -> FileState:
    return FileState(
        state.file_id,
        state.name,
        state.dev,
        state.ino,
        state.head_len,
        state.head_hash,
        state.offset,
        state.marker,
        state.line_no,
        now,
        pending,
    )
