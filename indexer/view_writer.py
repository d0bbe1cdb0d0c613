"""Per-agent view files: one line per entry, appended by the writer (ViewWriter)."""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

import msgspec

from indexer import safefs, store
from indexer.errors import StateDirError
from indexer.fileio import write_all, write_atomic
from indexer.models import Entry, ViewLine
from indexer.paths import FILE_MODE, StatePaths, is_valid_view_name
from indexer.store import StoredEntry

log = logging.getLogger("ctxd.views")

INSTRUCTION_EVENTS = frozenset({"agent_start", "agent_complete", "agent_launched", "agent_failed"})
AGENT_INSTRUCTIONS = "agent-instructions.jsonl"
ALL_AGENT_INSTRUCTIONS = "all-agent-instructions.jsonl"
_ENCODER = msgspec.json.Encoder()


class _SeqOnly(msgspec.Struct):
    seq: int = 0


_SEQ = msgspec.json.Decoder(_SeqOnly)


_LAST_SECOND: list[tuple[int, str]] = [(-1, "")]  # events come in bursts within a second


def iso_utc(ts_ns: int) -> str:
    """UTC ISO-8601 with milliseconds and a `Z` suffix."""
    seconds, rem = divmod(ts_ns, 1_000_000_000)
    last, prefix = _LAST_SECOND[0]
    if seconds != last:
        prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        _LAST_SECOND[0] = (seconds, prefix)
    return f"{prefix}.{rem // 1_000_000:03d}Z"


def view_line(entry_id: int, e: Entry) -> ViewLine:
    """The HookData-compatible view line of one entry."""
    return ViewLine(
        event=e.event,
        agent_type=e.agent_type,
        agent_id=e.agent_id,
        description=e.description,
        session_id=e.session_id,
        timestamp=iso_utc(e.ts_ns),
        seq=entry_id,
        instruction=e.instruction if e.event == "agent_start" else "",
        output_summary=e.output_summary,
        tool_name=e.tool_name,
        tool_use_id=e.tool_use_id,
        hook_event=e.hook_event,
        files=e.files,
        error=e.error,
    )


def view_files(paths: StatePaths, e: Entry) -> list[Path]:
    """Every view file an entry belongs to."""
    session_dir = paths.session_dir(e.session_id)
    name = e.agent_id if e.agent_id != "main" and is_valid_view_name(e.agent_id) else "main"
    files = [session_dir / f"{name}.jsonl"]
    if e.event in INSTRUCTION_EVENTS:
        files += [session_dir / AGENT_INSTRUCTIONS, paths.sessions / ALL_AGENT_INSTRUCTIONS]
    return files


_MAX_OPEN_VIEWS = 128


class ViewWriter:
    """Appends entries to their view files; remembers each file's last seq once read.

    Keeps up to `_MAX_OPEN_VIEWS` view files open (least recently used closed first): opening
    a file costs far more than appending a few lines to it, and a daemon pass touches the same
    few views again and again.
    """

    def __init__(self, paths: StatePaths) -> None:
        self.paths = paths
        self._last_seq: dict[Path, int] = {}
        self._fds: dict[Path, int] = {}  # insertion order = least recently used first

    def append(self, entries: Iterable[StoredEntry]) -> int:
        """Append entries (ascending ids) to their views; return lines written."""
        groups: dict[Path, list[tuple[int, bytes]]] = {}
        targets: dict[tuple[str, str, bool], list[Path]] = {}  # path building is not free
        for se in entries:
            e = se.entry
            key = (e.session_id, e.agent_id, e.event in INSTRUCTION_EVENTS)
            files = targets.get(key)
            if files is None:
                files = targets[key] = view_files(self.paths, e)
            line = _ENCODER.encode(view_line(se.id, e)) + b"\n"
            for path in files:
                groups.setdefault(path, []).append((se.id, line))
        written = 0
        for path, lines in groups.items():
            try:
                fd = self._fd(path)
            except (StateDirError, OSError) as e:
                if isinstance(e, OSError) and e.errno != errno.ELOOP:
                    raise
                refuse_symlink(path, e)
                continue
            last = self._last_seq.get(path)
            if last is None:
                last = self._last_seq[path] = last_seq_of_fd(fd)
            fresh = [line for seq, line in lines if seq > last]
            if fresh:
                write_all(fd, b"".join(fresh))
                self._last_seq[path] = lines[-1][0]
                written += len(fresh)
        return written

    def rebuild(self, conn: sqlite3.Connection, session_id: str, view: str) -> None:
        """Rewrite one agent view from the index (atomic replace)."""
        path = self.paths.session_dir(session_id) / f"{view}.jsonl"
        chunks = [
            _ENCODER.encode(view_line(se.id, se.entry)) + b"\n"
            for se in store.agent_entries(conn, session_id, view)
        ]
        self._drop(path)  # an open fd would keep writing to the replaced file
        try:
            if chunks:
                write_atomic(path, b"".join(chunks), root=self.paths.root)
            else:  # every entry moved to another agent: no view is left for this one
                safefs.unlink(self.paths.root, path)
        except StateDirError as e:
            refuse_symlink(path, e)

    def forget(self) -> None:
        """Close open views and drop remembered positions (files changed behind our back)."""
        for path in list(self._fds):
            self._drop(path)
        self._last_seq.clear()

    def close(self) -> None:
        """Close every open view file."""
        self.forget()

    def _fd(self, path: Path) -> int:
        fd = self._fds.pop(path, None)
        if fd is None:
            # Opened through directory fds walked from the state dir: a session folder
            # swapped for a symlink at any moment is refused, never written through.
            flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = safefs.open_file(self.paths.root, path, flags, FILE_MODE)
            if len(self._fds) >= _MAX_OPEN_VIEWS:
                self._drop(next(iter(self._fds)))
        self._fds[path] = fd
        return fd

    def _drop(self, path: Path) -> None:
        fd = self._fds.pop(path, None)
        if fd is not None:
            os.close(fd)
        self._last_seq.pop(path, None)


def append_after(conn: sqlite3.Connection, writer: ViewWriter, upto: int) -> tuple[int, int]:
    """Append every entry after id `upto` to the views, in bounded batches; return
    (lines written, the last id appended)."""
    written = 0
    while True:
        batch = store.entries_after(conn, upto, 20000)
        if not batch:
            return written, upto
        written += writer.append(batch)
        upto = batch[-1].id


def refuse_symlink(path: Path, error: Exception) -> None:
    """Skip a view whose folder or file is a symlink: the index keeps every entry, and
    `ctxd rebuild` writes the view once the link is gone (`ctxd doctor` lists such links)."""
    log.warning("view %s not written: %s", path, error)


def last_seq_of_fd(fd: int) -> int:
    """last_seq on an open (read-write) file descriptor."""
    size = os.fstat(fd).st_size
    block = 4096
    while size:
        start = max(0, size - block)
        data = os.pread(fd, size - start, start)
        end = data.rfind(b"\n")
        if end + 1 != len(data) and (end >= 0 or start == 0):
            size = start + end + 1  # a torn tail from a crash mid-append: cut it off
            os.ftruncate(fd, size)
            continue
        prev = data.rfind(b"\n", 0, max(end, 0))
        if prev < 0 and start > 0:
            block *= 4  # the last line is longer than the block
            continue
        try:
            return _SEQ.decode(data[prev + 1 : end]).seq
        except (msgspec.DecodeError, ValueError):
            return 0
    return 0
