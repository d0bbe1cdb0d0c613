"""Per-agent view files: one line per entry, appended by the writer (ViewWriter)."""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from indexer import safefs
from indexer.errors import StateDirError
from indexer.fileio import write_all, write_atomic
from indexer.index import store
from indexer.index.store import StoredEntry
from indexer.paths import FILE_MODE, StatePaths, check_session_id
from indexer.views.entry_lines import (
    INSTRUCTION_EVENTS,
    ViewKey,
    encode_line,
    view_keys,
    view_path,
)
from indexer.views.lines import NOTHING, head_before, last_line_of_fd, upper_bound

log = logging.getLogger("ctxd.views")

# A view line as the writer holds it before writing: (seq, (ts_ns, pid), its bytes).
_Line = tuple[int, tuple[int, int], bytes]

_MAX_OPEN_VIEWS = 128
_SORTED_CHUNK = 20000  # entries grouped per write by append_sorted
_MAX_OPEN_DIRS = 32
_FILE_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


class ViewWriter:
    """Appends entries to their view files; remembers where each file stands once read.

    A view holds its entries in event-time order, (ts_ns, pid), whatever order they were stored
    in. Entries come in id order, which is event-time order but for an event stored after later
    ones (a transcript imported after the hooks captured the rest of its session, two hooks
    racing for the spool): such a line is appended all the same and its view is noted in
    `unsorted` with the time from which it must be put in order (indexer.views.order does that
    once per pass, not once per batch).

    Keeps up to `_MAX_OPEN_VIEWS` view files and `_MAX_OPEN_DIRS` session folders open (least
    recently used closed first): opening a file costs far more than appending a few lines to
    it, and a daemon pass touches the same few views again and again. A folder is opened once
    by walking directory fds from the state dir (indexer.safefs), and its files relative to it.
    """

    def __init__(self, paths: StatePaths) -> None:
        self.paths = paths
        # Every entry of the view with an id up to this one is in the file.
        self._last_seq: dict[ViewKey, int] = {}
        # The (ts_ns, pid) of the newest event in the file, or an upper bound of it.
        self._newest: dict[ViewKey, tuple[int, int]] = {}
        # Views whose `_last_seq` was read from the file's last line: a line skipped as
        # already there was written before a crash, in whatever order.
        self._from_file: set[ViewKey] = set()
        self.unsorted: dict[ViewKey, int] = {}  # view -> ts_ns from which it is out of order
        self._fds: dict[ViewKey, int] = {}  # insertion order = least recently used first
        self._dirs: dict[str, int] = {}  # the same, for folders

    def append(self, entries: Iterable[StoredEntry]) -> int:
        """Append entries (ascending ids) to their views; return lines written."""
        groups: dict[ViewKey, list[_Line]] = {}
        targets: dict[tuple[str, str, str], tuple[ViewKey, ...]] = {}
        for se in entries:
            e = se.entry
            event = e.event
            key = (e.session_id, e.agent_id, event if event in INSTRUCTION_EVENTS else "")
            files = targets.get(key)
            if files is None:
                files = targets[key] = view_keys(e)
            item = (se.id, (e.ts_ns, e.pid), encode_line(se))
            for name in files:
                group = groups.get(name)
                if group is None:
                    groups[name] = [item]
                else:
                    group.append(item)
        written = 0
        for name, group in groups.items():
            try:
                fd = self._fd(name)
            except (StateDirError, OSError) as e:
                if not _is_refusal(e):
                    raise
                refuse_symlink(view_path(self.paths, name), e)
                continue
            last = self._last_seq.get(name)
            if last is None:
                last = self._read_position(name, fd)
            fresh = group if group[0][0] > last else self._not_written(name, group, last)
            if not fresh:
                continue
            newest = self._newest[name]
            for _, event_key, _ in fresh:
                if event_key < newest:
                    self._note_unsorted(name, event_key[0])
                else:
                    newest = event_key
            write_all(fd, b"".join([line for _, _, line in fresh]))
            written += len(fresh)
            self._last_seq[name] = fresh[-1][0]
            self._newest[name] = newest
        return written

    def _not_written(self, name: ViewKey, group: list[_Line], last: int) -> list[_Line]:
        """The lines of `group` after seq `last`: after a crash mid-catch-up, part of them is
        in the file already, written in whatever order (so noted for ordering)."""
        if name in self._from_file:
            self._note_unsorted(name, min(key[0] for seq, key, _ in group if seq <= last))
        return [item for item in group if item[0] > last]

    def append_sorted(self, entries: Iterable[StoredEntry]) -> int:
        """Write entries given in event-time order to views that start empty (a rebuild);
        return lines written."""
        written = 0
        groups: dict[ViewKey, list[bytes]] = {}
        for n, se in enumerate(entries, 1):
            line = encode_line(se)
            for name in view_keys(se.entry):
                groups.setdefault(name, []).append(line)
            if n % _SORTED_CHUNK == 0:
                written += self._write_groups(groups)
                groups = {}
        return written + self._write_groups(groups)

    def _write_groups(self, groups: dict[ViewKey, list[bytes]]) -> int:
        written = 0
        for name, lines in groups.items():
            try:
                fd = self._fd(name)
            except (StateDirError, OSError) as e:
                if not _is_refusal(e):
                    raise
                refuse_symlink(view_path(self.paths, name), e)
                continue
            write_all(fd, b"".join(lines))
            written += len(lines)
        return written

    def take_unsorted(self) -> dict[ViewKey, int]:
        """The views noted out of order since the last call (the caller stores them)."""
        found, self.unsorted = self.unsorted, {}
        return found

    def rebuild(self, conn: sqlite3.Connection, session_id: str, view: str) -> None:
        """Rewrite one agent view from the index, in event-time order (atomic replace)."""
        path = self.paths.session_dir(session_id) / f"{view}.jsonl"
        name = (session_id, f"{view}.jsonl")
        upto = store.max_entry_id(conn)
        chunks = []
        newest = NOTHING
        for se in store.agent_entries(conn, session_id, view):
            chunks.append(encode_line(se))
            newest = (se.entry.ts_ns, se.entry.pid)
        self._drop(name)  # an open fd would keep writing to the old file
        try:
            if chunks:
                write_atomic(path, b"".join(chunks), root=self.paths.root)
            else:  # every entry moved to another agent: no view is left for this one
                safefs.unlink(self.paths.root, path)
        except StateDirError as e:
            refuse_symlink(path, e)
            return
        # Every entry of the view stored so far is in it, in order: the batch's own entries,
        # appended next, are skipped by their ids.
        self._last_seq[name], self._newest[name] = upto, newest

    def cut_tail(self, name: ViewKey, since: str) -> bool:
        """Cut a view just before its first line stamped `since` (an ISO time as view lines
        have it) or later, where the head before it is in order; False if the view is refused
        (a symlink on its way) or gone. Forgets where the view stood: the caller rewrites its
        tail."""
        if name not in self._fds and not os.path.lexists(view_path(self.paths, name)):
            return False  # deleted, or emptied by an agent move (`rebuild`): nothing to order
        try:
            fd = self._fd(name)
        except (StateDirError, OSError) as e:
            if not _is_refusal(e):
                raise
            refuse_symlink(view_path(self.paths, name), e)
            return False
        os.ftruncate(fd, head_before(fd, since))
        self.forget_view(name)
        return True

    def write_lines(self, name: ViewKey, data: bytes) -> None:
        """Append whole lines to a view opened by `cut_tail`."""
        write_all(self._fd(name), data)

    def drop_if_empty(self, name: ViewKey) -> None:
        """Remove a view left with no line (its entries all moved to another agent), as
        `rebuild` does: a view file exists only for an agent with entries."""
        fd = self._fds.get(name)
        if fd is not None and os.fstat(fd).st_size == 0:
            self._drop(name)
            path = view_path(self.paths, name)
            try:
                safefs.unlink(self.paths.root, path)
            except StateDirError as e:
                refuse_symlink(path, e)

    def forget_view(self, name: ViewKey) -> None:
        """Drop what is remembered of one view's position (it is read again when next used)."""
        self._last_seq.pop(name, None)
        self._newest.pop(name, None)
        self._from_file.discard(name)

    def forget(self) -> None:
        """Close open views and folders and drop remembered positions (files changed behind
        our back)."""
        for name in list(self._fds):
            self._drop(name)
        self._close_dirs()
        self._last_seq.clear()
        self._newest.clear()
        self._from_file.clear()

    def close(self) -> None:
        """Close every open view file."""
        self.forget()

    def _fd(self, name: ViewKey) -> int:
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

    def _drop(self, name: ViewKey) -> None:
        fd = self._fds.pop(name, None)
        if fd is not None:
            os.close(fd)
        self.forget_view(name)

    def _read_position(self, name: ViewKey, fd: int) -> int:
        """Where a view stands, from its last line that parses (a torn tail is cut first)."""
        last = last_line_of_fd(fd)
        self._last_seq[name] = last.seq
        self._newest[name] = upper_bound(last.timestamp) if last.seq else NOTHING
        self._from_file.add(name)
        return last.seq

    def _note_unsorted(self, name: ViewKey, ts_ns: int) -> None:
        since = self.unsorted.get(name)
        if since is None or ts_ns < since:
            self.unsorted[name] = ts_ns


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
