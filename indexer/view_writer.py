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
from indexer.fileio import lines_backwards, write_all, write_atomic
from indexer.models import Entry, ViewLine
from indexer.paths import FILE_MODE, StatePaths, check_session_id, is_valid_view_name
from indexer.store import StoredEntry

log = logging.getLogger("ctxd.views")

INSTRUCTION_EVENTS = frozenset({"agent_start", "agent_complete", "agent_launched", "agent_failed"})
AGENT_INSTRUCTIONS = "agent-instructions.jsonl"
ALL_AGENT_INSTRUCTIONS = "all-agent-instructions.jsonl"
_ENCODER = msgspec.json.Encoder()


class _SeqOnly(msgspec.Struct):
    seq: int = 0


_SEQ = msgspec.json.Decoder(_SeqOnly)


# Events come in bursts within a minute (an imported session's: seconds apart): the date and
# time up to the minute are formatted once per minute.
_LAST_MINUTE: list[tuple[int, str]] = [(-1, "")]


def iso_utc(ts_ns: int) -> str:
    """UTC ISO-8601 with milliseconds and a `Z` suffix."""
    seconds, rem = divmod(ts_ns, 1_000_000_000)
    minute, second = divmod(seconds, 60)  # UTC minutes have 60 seconds (POSIX time)
    last, prefix = _LAST_MINUTE[0]
    if minute != last:
        prefix = time.strftime("%Y-%m-%dT%H:%M", time.gmtime(seconds))
        _LAST_MINUTE[0] = (minute, prefix)
    return f"{prefix}:{second:02d}.{rem // 1_000_000:03d}Z"


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


# A view file by (its folder, its name): the folder is a session id, or "" for the sessions
# folder itself (the project-wide instruction view). Strings, not Paths: building a Path per
# entry cost more than formatting its line.
_Key = tuple[str, str]


def view_files(paths: StatePaths, e: Entry) -> list[Path]:
    """Every view file an entry belongs to."""
    return [_key_path(paths, key) for key in _view_keys(e)]


def _view_keys(e: Entry) -> tuple[_Key, ...]:
    """The (folder, file name) keys of every view file an entry belongs to."""
    check_session_id(e.session_id)
    name = e.agent_id if e.agent_id != "main" and is_valid_view_name(e.agent_id) else "main"
    own = (e.session_id, f"{name}.jsonl")
    if e.event in INSTRUCTION_EVENTS:
        return own, (e.session_id, AGENT_INSTRUCTIONS), ("", ALL_AGENT_INSTRUCTIONS)
    return (own,)


def _key_path(paths: StatePaths, key: _Key) -> Path:
    folder, file = key
    return (paths.sessions / folder if folder else paths.sessions) / file


_MAX_OPEN_VIEWS = 128
_MAX_OPEN_DIRS = 32
_FILE_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


class ViewWriter:
    """Appends entries to their view files; remembers each file's last seq once read.

    Keeps up to `_MAX_OPEN_VIEWS` view files and `_MAX_OPEN_DIRS` session folders open (least
    recently used closed first): opening a file costs far more than appending a few lines to
    it, and a daemon pass touches the same few views again and again. A folder is opened once
    by walking directory fds from the state dir (indexer.safefs), and its files relative to it.
    """

    def __init__(self, paths: StatePaths) -> None:
        self.paths = paths
        self._last_seq: dict[_Key, int] = {}
        self._fds: dict[_Key, int] = {}  # insertion order = least recently used first
        self._dirs: dict[str, int] = {}  # the same, for folders

    def append(self, entries: Iterable[StoredEntry]) -> int:
        """Append entries (ascending ids) to their views; return lines written."""
        groups: dict[_Key, list[tuple[int, bytes]]] = {}
        targets: dict[tuple[str, str, str], tuple[_Key, ...]] = {}
        for se in entries:
            e = se.entry
            event = e.event
            key = (e.session_id, e.agent_id, event if event in INSTRUCTION_EVENTS else "")
            files = targets.get(key)
            if files is None:
                files = targets[key] = _view_keys(e)
            line = _ENCODER.encode(view_line(se.id, e)) + b"\n"
            for name in files:
                group = groups.get(name)
                if group is None:
                    groups[name] = [(se.id, line)]
                else:
                    group.append((se.id, line))
        written = 0
        for name, lines in groups.items():
            try:
                fd = self._fd(name)
            except (StateDirError, OSError) as e:
                if not _is_refusal(e):
                    raise
                refuse_symlink(_key_path(self.paths, name), e)
                continue
            last = self._last_seq.get(name)
            if last is None:
                last = self._last_seq[name] = last_seq_of_fd(fd)
            if lines[0][0] > last:
                write_all(fd, b"".join([line for _, line in lines]))
                written += len(lines)
            else:  # after a crash mid-catch-up: part of these lines is in the file already
                fresh = [line for seq, line in lines if seq > last]
                if not fresh:
                    continue
                write_all(fd, b"".join(fresh))
                written += len(fresh)
            self._last_seq[name] = lines[-1][0]
        return written

    def rebuild(self, conn: sqlite3.Connection, session_id: str, view: str) -> None:
        """Rewrite one agent view from the index (atomic replace)."""
        path = self.paths.session_dir(session_id) / f"{view}.jsonl"
        chunks = [
            _ENCODER.encode(view_line(se.id, se.entry)) + b"\n"
            for se in store.agent_entries(conn, session_id, view)
        ]
        self._drop((session_id, f"{view}.jsonl"))  # an open fd would keep writing to the old file
        try:
            if chunks:
                write_atomic(path, b"".join(chunks), root=self.paths.root)
            else:  # every entry moved to another agent: no view is left for this one
                safefs.unlink(self.paths.root, path)
        except StateDirError as e:
            refuse_symlink(path, e)

    def forget(self) -> None:
        """Close open views and folders and drop remembered positions (files changed behind
        our back)."""
        for name in list(self._fds):
            self._drop(name)
        self._close_dirs()
        self._last_seq.clear()

    def close(self) -> None:
        """Close every open view file."""
        self.forget()

    def _fd(self, name: _Key) -> int:
        fd = self._fds.pop(name, None)
        if fd is None:
            # O_NOFOLLOW, relative to a folder fd opened without following links: a view
            # file or a folder swapped for a symlink is refused, never written through.
            try:
                fd = os.open(name[1], _FILE_FLAGS, FILE_MODE, dir_fd=self._dir(name[0]))
            except FileNotFoundError:  # the folder was deleted since it was opened: walk again
                self._close_dirs()
                fd = os.open(name[1], _FILE_FLAGS, FILE_MODE, dir_fd=self._dir(name[0]))
            if len(self._fds) >= _MAX_OPEN_VIEWS:
                self._drop(next(iter(self._fds)))
        self._fds[name] = fd
        return fd

    def _dir(self, folder: str) -> int:
        fd = self._dirs.pop(folder, None)
        if fd is None:
            if folder:
                fd = safefs.open_private_dir(check_session_id(folder), self._dir(""))
            else:
                fd = safefs.open_dir(self.paths.root, self.paths.sessions)
            if len(self._dirs) >= _MAX_OPEN_DIRS:
                os.close(self._dirs.pop(next(iter(self._dirs))))
        self._dirs[folder] = fd
        return fd

    def _close_dirs(self) -> None:
        for fd in self._dirs.values():
            os.close(fd)
        self._dirs.clear()

    def _drop(self, name: _Key) -> None:
        fd = self._fds.pop(name, None)
        if fd is not None:
            os.close(fd)
        self._last_seq.pop(name, None)


def _is_refusal(error: Exception) -> bool:
    """True for a symlink (or a foreign or world-writable folder) met on the way to a view."""
    return isinstance(error, (StateDirError, safefs.UnsafeStateDir)) or (
        isinstance(error, OSError) and error.errno == errno.ELOOP
    )


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
    """The `seq` of the last line that parses in an open (read-write) view; a torn tail left
    by a crash mid-append is cut off first, and corrupt lines are passed over (0: none)."""
    size = os.fstat(fd).st_size
    end = _after_last_newline(fd, size)
    if end != size:
        os.ftruncate(fd, end)
    for line in lines_backwards(fd, end):
        try:
            seq = _SEQ.decode(line).seq
        except (msgspec.DecodeError, ValueError):
            continue
        if seq > 0:
            return seq
    return 0


def _after_last_newline(fd: int, size: int) -> int:
    """The offset just after the last b"\\n" of a file `size` bytes long (0 if none)."""
    pos = size
    while pos > 0:
        start = max(0, pos - 4096)
        found = os.pread(fd, pos - start, start).rfind(b"\n")
        if found >= 0:
            return start + found + 1
        pos = start
    return 0
