"""Import Claude Code transcript files through the hook ingest path, with per-file offsets."""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from indexer import store, transcript_store
from indexer.ingest_lines import Batch, guarded_event
from indexer.tailer import (
    Action,
    FileState,
    advanced,
    decide,
    next_newline,
    observe,
    read_chunk,
)
from indexer.transcript_records import Converter, RecordError
from indexer.writer import IndexWriter

log = logging.getLogger("ctxd.import")
# A tool call still without its result this many lines later never gets one (the session was
# killed mid-call): stop holding the committed offset back for it.
_ORPHAN_LINES = 5000
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


class TranscriptImporter:
    """Imports transcript files into the index of a writer (its holder has the lock, I8)."""

    def __init__(self, writer: IndexWriter) -> None:
        self.writer = writer
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
        stats = ImportStats(files=1)
        if not _is_utf8_name(path):
            # Its name keys its read position and names its quarantined lines in the index,
            # whose text is UTF-8: skipped, not a failure of the whole import (I6).
            log.warning(
                "skipped transcript %s: its name is not valid UTF-8; rename it to import it",
                os.fsencode(path).decode("utf-8", "backslashreplace"),
            )
            return stats
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as e:
            log.warning("cannot open transcript %s: %s", path, e)
            return stats
        try:
            stored = transcript_store.load_file(self.conn, str(path))
            seen = observe(fd, stored.offset if stored else 0)
            action = decide(stored, seen)
            if action is Action.CONTINUE and stored is not None and stored.offset == seen.size:
                return stats  # nothing new: one stat and two small reads
            if action is not Action.CONTINUE or stored is None:
                if action is not Action.NEW:
                    log.warning("transcript %s was %s; reading it again", path, action.value)
                with store.transaction(self.conn):
                    stored = transcript_store.restart_file(self.conn, str(path), seen.dev, seen.ino)
            stats.changed = 1
            is_live = time.time() - os.fstat(fd).st_mtime < _LIVE_S
            converter = Converter(str(path), _agent_type(path))
            self._read(fd, stored, seen.size, converter, stats, is_live=is_live)
            if progress is not None:
                progress(seen.size - stored.offset)
            return stats
        finally:
            os.close(fd)

    def _read(
        self,
        fd: int,
        state: FileState,
        size: int,
        converter: Converter,
        stats: ImportStats,
        *,
        is_live: bool,
    ) -> None:
        """Read from `state` to the last complete line, one transaction per batch (I3)."""
        pos, line_no = state.offset, state.line_no
        while pos < size:
            chunk = read_chunk(fd, pos, size, self.config.batch_bytes, self.config.max_line_bytes)
            # Lines are cut from the chunk as they are read: no list of lines is built.
            consumed = chunk.rfind(b"\n") + 1
            if not consumed:
                if len(chunk) < self.config.max_line_bytes:
                    return  # a partial last line: not yet written (I4); read it next time
                end = next_newline(fd, pos, size)
                length = -1 if end < 0 else end + 1 - pos
                if length < 0:
                    return  # an oversize line still being written
                error = f"line exceeds [ingest] max_line_bytes ({length} bytes)"
                pos, line_no = pos + length, line_no + 1
                held = converter.oldest_pending(with_text=is_live)
                offset, at_line = (pos, line_no) if held is None else held
                state = self._commit(fd, state, offset, at_line, [(pos - length, line_no, error)])
                stats.quarantined += 1
                continue
            batch = Batch(state)
            registry = self.registry
            try:
                with store.transaction(self.conn):
                    first = line_no
                    line_no = self._lines(batch, converter, chunk, consumed, pos, line_no)
                    batch.pending = transcript_store.separate_keys(self.conn, batch.pending)
                    self.writer.ingestor.store_batch(batch)
                    registry.flush()
                    pos += consumed
                    converter.forget_older_than(line_no - _ORPHAN_LINES)
                    # A call whose result is not read yet keeps the offset before its line:
                    # the next run reads the call again and joins it to its result.
                    held = converter.oldest_pending(with_text=is_live)
                    offset, at_line = (pos, line_no) if held is None else held
                    state = self._save(fd, state, offset, at_line)
            except BaseException:
                registry.reset()
                raise
            stats.lines += line_no - first
            stats.bytes += consumed
            stats.entries += batch.stats.entries
            stats.duplicates += batch.stats.duplicates
            stats.quarantined += batch.stats.quarantined
            if self.writer.ingestor.on_batch is not None and batch.stats.inserted:
                self.writer.ingestor.on_batch(batch.stats)

    def _lines(
        self, batch: Batch, converter: Converter, buf: bytes, end: int, pos: int, line_no: int
    ) -> int:
        """Import the lines of `buf` (read at `pos`) up to `end`, just after a line's b"\\n";
        return the last line's number."""
        start = 0
        find = buf.find
        while start < end:
            stop = find(b"\n", start)
            line_no += 1
            self._line(batch, converter, buf[start:stop], pos + start, line_no)
            start = stop + 1
        return line_no

    def _line(
        self, batch: Batch, converter: Converter, data: bytes, offset: int, line_no: int
    ) -> None:
        if not data or data.isspace():  # isspace stops at the first other byte
            return
        if len(data) > self.config.max_line_bytes:
            error = f"line exceeds [ingest] max_line_bytes ({len(data)} bytes)"
            batch.quarantine(offset, line_no, error, data)
            return
        try:
            events = converter.convert(data, offset, line_no)
        except RecordError as e:
            batch.quarantine(offset, line_no, str(e), data)
            return
        except sqlite3.Error:
            raise
        except Exception as e:  # a record shape no rule foresaw must not stop the import (I6)
            batch.quarantine_failure(offset, line_no, e, data)
            return
        for event in events:
            guarded_event(batch, offset, line_no, event, self.config, self.registry)

    def _save(self, fd: int, state: FileState, offset: int, line_no: int) -> FileState:
        new = advanced(state, fd, offset, line_no)
        transcript_store.save_file(self.conn, new)
        return new

    def _commit(
        self, fd: int, state: FileState, offset: int, line_no: int, bad: list[tuple[int, int, str]]
    ) -> FileState:
        """Quarantine lines that were never decoded and store the new offset."""
        batch = Batch(state)
        for at, at_line, error in bad:
            batch.quarantine(at, at_line, error, os.pread(fd, 4096, at))
        with store.transaction(self.conn):
            self.writer.ingestor.store_batch(batch)
            return self._save(fd, state, offset, line_no)


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
