"""Import Claude Code transcript files through the hook ingest path, with per-file offsets."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import msgspec

from indexer.index.transactions import transaction
from indexer.ingest.lines import Batch, take_converted
from indexer.prepare.line import oversize_error
from indexer.spool.tailer import (
    Action,
    FileState,
    advanced,
    decide,
    next_newline,
    observe,
    read_chunk,
)
from indexer.transcripts import offsets as transcript_store
from indexer.transcripts.codex_rollouts import CodexConverter
from indexer.transcripts.prepare import Converted, LineConverter, prepare_transcript_lines
from indexer.transcripts.records import Converter
from indexer.writer.catch_up import IndexWriter

log = logging.getLogger("ctxd.import")
# Claude Code writes a turn's end milliseconds after its last text. In a file written to
# this recently the end may still come, so the text's line is read again next time; in an
# older one (an idle or finished session, or a version that marks no turn's end) it never
# will, and re-reading it would only cost time.
_LIVE_S = 300.0


@dataclass
class ImportStats:
    """What an import did (counts are of this run only)."""

    files: int = 0  # transcript files looked at
    changed: int = 0  # files with something new
    lines: int = 0
    entries: int = 0
    duplicates: int = 0
    quarantined: int = 0
    bytes: int = 0

    def add(self, other: ImportStats) -> None:
        for name in ("files", "changed", "lines", "entries", "duplicates", "quarantined", "bytes"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class FileRun:
    """One transcript file being imported: what it committed and how far it stored."""

    path: Path
    fd: int
    state: FileState  # as last committed
    size: int  # read up to here in this run
    is_live: bool
    agent_type: str
    stats: ImportStats
    start: tuple[int, int]  # where the run began (offset, lines before it)
    pos: int = -1  # the end of the last batch stored, and its last line's number
    line_no: int = 0
    held: tuple[int, int] | None = None  # what the last batch stored held back
    converter: LineConverter | None = None  # None while the prepare worker holds it

    def __post_init__(self) -> None:
        if self.pos < 0:
            self.pos, self.line_no = self.start


@dataclass(frozen=True)
class Step:
    """A batch of complete lines read at `pos` after line `line_no` (`chunk` holds them in
    its first `consumed` bytes), or (chunk None) one line too long to read, `consumed` long."""

    pos: int
    line_no: int
    chunk: bytes | None
    consumed: int
    lines: int  # how many (counted only when asked)


class TranscriptImporter:
    """Imports transcript files into the index of a writer (its holder has the lock, I8):
    Claude Code's transcripts, or with `host="codex"` Codex CLI's rollouts."""

    def __init__(self, writer: IndexWriter, host: str = "") -> None:
        self.writer = writer
        self.host = host
        self.conn = writer.conn
        self.config = writer.ingestor.config.ingest
        self.registry = writer.ingestor.registry
        transcript_store.ensure_schema(self.conn)

    def pending_bytes(self, paths: list[Path]) -> int:
        """How many bytes of `paths` a run would read (for a progress bar)."""
        known = transcript_store.all_files(self.conn)
        total = 0
        for path in paths:
            try:
                size = os.stat(path, follow_symlinks=False).st_size
            except OSError:
                continue
            stored = known.get(str(path))
            total += max(0, size - (stored.offset if stored else 0))
        return total

    def import_file(self, path: Path, progress: Callable[[int], None] | None = None) -> ImportStats:
        """Import what is new in one transcript file; `progress` gets the bytes read."""
        stats, run = self.open_run(path)
        if run is None:
            return stats
        run.converter = self.new_converter(run)
        try:
            self.resume(run)
        finally:
            os.close(run.fd)
        if progress is not None:
            progress(run.size - run.start[0])
        return run.stats

    def open_run(self, path: Path) -> tuple[ImportStats, FileRun | None]:
        """The file's run, if it has anything new (its state committed first); else its stats."""
        stats = ImportStats(files=1)
        if not _is_utf8_name(path):
            # Its name keys its read position and names its quarantined lines in the index,
            # whose text is UTF-8: skipped, not a failure of the whole import (I6).
            log.warning(
                "skipped transcript %s: its name is not valid UTF-8; rename it to import it",
                os.fsencode(path).decode("utf-8", "backslashreplace"),
            )
            return stats, None
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as e:
            log.warning("cannot open transcript %s: %s", path, e)
            return stats, None
        try:
            stored = transcript_store.load_file(self.conn, str(path))
            seen = observe(fd, stored.offset if stored else 0)
            action = decide(stored, seen)
            if action is Action.CONTINUE and stored is not None and stored.offset == seen.size:
                os.close(fd)
                return stats, None  # nothing new: one stat and two small reads
            if action is not Action.CONTINUE or stored is None:
                if action is not Action.NEW:
                    log.warning("transcript %s was %s; reading it again", path, action.value)
                with transaction(self.conn):
                    stored = transcript_store.restart_file(self.conn, str(path), seen.dev, seen.ino)
            stats.changed = 1
            is_live = time.time() - os.fstat(fd).st_mtime < _LIVE_S
        except BaseException:
            os.close(fd)
            raise
        start = (stored.offset, stored.line_no)
        run = FileRun(path, fd, stored, seen.size, is_live, _agent_type(path), stats, start)
        return stats, run

    def resume(self, run: FileRun) -> None:
        """Read `run` in process from what it stored to its last complete line. A run whose
        converter was in the worker gets a new one, fed again from the run's start (nothing
        stored twice): a converter must see every line of the file in order."""
        pos, line_no = run.pos, run.line_no
        if run.converter is None:
            run.converter = self.new_converter(run)
            pos, line_no = run.start
        for read in self.steps(run, pos, line_no, count=False):
            step = replace(read, line_no=line_no)
            if step.chunk is None:
                if step.pos >= run.pos:
                    self.oversize(run, step)
                line_no += 1
                continue
            converted = self.prepare(run, step)
            if step.pos >= run.pos:  # else stored already: only the converter needed it
                self.store(run, step, converted)
            line_no = converted.line_no

    def new_converter(self, run: FileRun) -> LineConverter:
        if self.host == "codex":
            return CodexConverter(str(run.path))
        return Converter(str(run.path), run.agent_type)

    def steps(self, run: FileRun, pos: int, line_no: int, *, count: bool = True) -> Iterator[Step]:
        """The batches (and oversize lines) of `run` from `pos`, after line `line_no`, to its
        last complete line. Without `count`, a batch's lines are not counted: the caller
        numbers the steps itself (the prepare step counts the lines it cuts)."""
        cfg = self.config
        while pos < run.size:
            chunk = read_chunk(run.fd, pos, run.size, cfg.batch_bytes, cfg.max_line_bytes)
            # Lines are cut from the chunk as they are imported: no list of lines is built.
            consumed = chunk.rfind(b"\n") + 1
            if consumed:
                lines = chunk.count(b"\n", 0, consumed) if count else 0
                yield Step(pos, line_no, chunk, consumed, lines)
                pos, line_no = pos + consumed, line_no + lines
                continue
            if len(chunk) < cfg.max_line_bytes:
                return  # a partial last line: not yet written (I4); read it next time
            end = next_newline(run.fd, pos, run.size)
            if end < 0:
                return  # an oversize line still being written
            yield Step(pos, line_no, None, end + 1 - pos, 1)
            pos, line_no = end + 1, line_no + 1

    def prepare(self, run: FileRun, step: Step) -> Converted:
        """Convert and prepare a batch in process."""
        assert run.converter is not None and step.chunk is not None
        return prepare_transcript_lines(
            run.converter,
            step.chunk,
            step.consumed,
            step.pos,
            step.line_no,
            run.state.file_id,
            self.config,
            is_live=run.is_live,
            host=self.host,
        )

    def store(self, run: FileRun, step: Step, converted: Converted) -> None:
        """Store a prepared batch and its file's new offset in one transaction (I3)."""
        chunk = step.chunk
        assert chunk is not None

        def line_at(offset: int) -> bytes:
            at = offset - step.pos
            return chunk[at : chunk.index(b"\n", at)]

        batch = Batch(run.state)
        registry = self.registry
        end = step.pos + step.consumed
        try:
            with transaction(self.conn):
                take_converted(batch, converted, registry, line_at)
                batch.pending = transcript_store.separate_keys(self.conn, batch.pending)
                self.writer.ingestor.store_batch(batch)
                registry.flush()
                held = converted.held
                offset, at_line = (end, converted.line_no) if held is None else held
                run.state = self._save(run.fd, run.state, offset, at_line)
        except BaseException:
            registry.reset()
            raise
        run.pos, run.line_no, run.held = end, converted.line_no, converted.held
        stats = run.stats
        stats.lines += converted.line_no - step.line_no
        stats.bytes += step.consumed
        stats.entries += batch.stats.entries
        stats.duplicates += batch.stats.duplicates
        stats.quarantined += batch.stats.quarantined
        if self.writer.ingestor.on_batch is not None and batch.stats.inserted:
            self.writer.ingestor.on_batch(batch.stats)

    def oversize(self, run: FileRun, step: Step) -> None:
        """Quarantine a line longer than [ingest] max_line_bytes, unread, and go past it."""
        error = oversize_error(step.consumed)
        end = step.pos + step.consumed
        offset, at_line = (end, step.line_no + 1) if run.held is None else run.held
        batch = Batch(run.state)
        batch.quarantine(step.pos, step.line_no + 1, error, os.pread(run.fd, 4096, step.pos))
        with transaction(self.conn):
            self.writer.ingestor.store_batch(batch)
            run.state = self._save(run.fd, run.state, offset, at_line)
        run.pos, run.line_no = end, step.line_no + 1
        run.stats.quarantined += 1

    def _save(self, fd: int, state: FileState, offset: int, line_no: int) -> FileState:
        new = advanced(state, fd, offset, line_no)
        transcript_store.save_file(self.conn, new)
        return new


def _is_utf8_name(path: Path) -> bool:
    """False for a name with bytes that are not UTF-8 (decoded by Python as surrogates)."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _agent_type(path: Path) -> str:
    """The subagent type of `subagents/agent-<id>.jsonl`, from its `.meta.json` if present."""
    if not path.name.startswith("agent-"):
        return ""
    meta = path.with_name(path.name.removesuffix(".jsonl") + ".meta.json")
    try:
        fd = os.open(meta, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        data = os.read(fd, 1 << 16)
    finally:
        os.close(fd)
    try:
        value = msgspec.json.decode(data)
    except (msgspec.DecodeError, ValueError):
        return ""
    agent_type = value.get("agentType") if isinstance(value, dict) else None
    return agent_type if isinstance(agent_type, str) else ""
