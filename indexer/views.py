"""Per-session, per-agent JSONL views (seed 000 §3.5), appended after commits, rebuildable.

Each view line carries `seq`, the entry's id in the index. A view is caught up by reading the
`seq` of its last complete line and appending only later entries, so a crash between an append
and the index's bookkeeping never writes a line twice; a torn last line is cut off first.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

import msgspec

from indexer import store
from indexer.fileio import append_bytes, write_atomic
from indexer.models import Entry, ViewLine
from indexer.paths import StatePaths, is_valid_view_name
from indexer.store import StoredEntry

INSTRUCTION_EVENTS = frozenset({"agent_start", "agent_complete", "agent_launched", "agent_failed"})
AGENT_INSTRUCTIONS = "agent-instructions.jsonl"
ALL_AGENT_INSTRUCTIONS = "all-agent-instructions.jsonl"
_ENCODER = msgspec.json.Encoder()


class _SeqOnly(msgspec.Struct):
    seq: int = 0


_SEQ = msgspec.json.Decoder(_SeqOnly)


def iso_utc(ts_ns: int) -> str:
    """UTC ISO-8601 with milliseconds and a `Z` suffix."""
    seconds, rem = divmod(ts_ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rem // 1_000_000:03d}Z"


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


class ViewWriter:
    """Appends entries to their view files; remembers each file's last seq once read."""

    def __init__(self, paths: StatePaths) -> None:
        self.paths = paths
        self._last_seq: dict[Path, int] = {}

    def append(self, entries: Iterable[StoredEntry]) -> int:
        """Append entries (ascending ids) to their views; return lines written."""
        groups: dict[Path, list[tuple[int, bytes]]] = {}
        for se in entries:
            line = _ENCODER.encode(view_line(se.id, se.entry)) + b"\n"
            for path in view_files(self.paths, se.entry):
                groups.setdefault(path, []).append((se.id, line))
        written = 0
        for path, lines in groups.items():
            last = self._seq_of(path)
            fresh = [line for seq, line in lines if seq > last]
            if fresh:
                append_bytes(path, b"".join(fresh))
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
        write_atomic(path, b"".join(chunks))
        self._last_seq.pop(path, None)

    def forget(self) -> None:
        """Drop remembered positions (after files were rewritten behind our back)."""
        self._last_seq.clear()

    def _seq_of(self, path: Path) -> int:
        seq = self._last_seq.get(path)
        if seq is None:
            seq = last_seq(path)
            self._last_seq[path] = seq
        return seq


def catch_up(conn: sqlite3.Connection, writer: ViewWriter) -> int:
    """Bring every view up to date with the index; return lines written."""
    written = 0
    for session_id, view in conn.execute("SELECT session_id, view FROM dirty_views").fetchall():
        writer.rebuild(conn, session_id, view)
        conn.execute("DELETE FROM dirty_views WHERE session_id=? AND view=?", (session_id, view))
    upto = int(store.get_meta(conn, "views_upto", "0") or 0)
    while True:
        batch = store.entries_after(conn, upto, 20000)
        if not batch:
            break
        written += writer.append(batch)
        upto = batch[-1].id
    store.set_meta(conn, "views_upto", str(upto))
    return written


def rebuild_all(conn: sqlite3.Connection, paths: StatePaths) -> int:
    """Delete and regenerate every view from the index (`ctxd rebuild`)."""
    for path in sorted(paths.sessions.glob("*/*.jsonl")):
        path.unlink()
    global_file = paths.sessions / ALL_AGENT_INSTRUCTIONS
    if global_file.exists():
        global_file.unlink()
    conn.execute("DELETE FROM dirty_views")
    store.set_meta(conn, "views_upto", "0")
    return catch_up(conn, ViewWriter(paths))


def last_seq(path: Path) -> int:
    """The seq of the last complete line of a view; cuts off a torn last line (crash)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return 0
    try:
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
    finally:
        os.close(fd)
