"""Index queries of the transcript import: per-file offsets with identity, and event matching."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import msgspec

from indexer.models import Entry, HookPayload
from indexer.spool.tailer import FileState
from indexer.transcripts.imported import IMPORT_PID

# Imported transcript files are numbered below zero in `entries.file_id` and `quarantine`,
# so that they never share a number with a spool segment.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS transcript_files(
    file_id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, dev INTEGER NOT NULL,
    ino INTEGER NOT NULL, head_len INTEGER NOT NULL, head_hash BLOB NOT NULL,
    offset INTEGER NOT NULL, marker BLOB NOT NULL, line_no INTEGER NOT NULL)
"""
# Events without a tool_use_id that hooks and transcripts both give: the same event is the
# same kind in the same session, close in time (the hook's clock is the moment it fired,
# the transcript's the moment the record was written); a prompt, or a Stop's last message,
# must also have the same text.
# A compaction's hook fires before the summary is written, which can take minutes.
MATCH_WINDOW_NS = {
    "UserPromptSubmit": 120 * 10**9,
    "SubagentPrompt": 120 * 10**9,  # Codex's (indexer.prepare.codex_payloads)
    "Stop": 120 * 10**9,
    "PreCompact": 600 * 10**9,
    "PostCompact": 600 * 10**9,
}

_SAME_TEXT = frozenset({"UserPromptSubmit", "SubagentPrompt", "Stop"})
# A subagent's start and stop name it by Claude Code's agent id: the same id is the same event.
_SAME_AGENT = frozenset({"SubagentStart", "SubagentStop"})


# Created by the first import, so that an index never imported into pays nothing for it;
# partial: only events without a tool_use_id (the few matched by time) are in it.
_MATCH_INDEX = "entries_matchable"
_INDEX = (
    f"CREATE INDEX IF NOT EXISTS {_MATCH_INDEX} ON entries(session_id, hook_event, ts_ns)"
    " WHERE tool_key IS NULL"
)


def ensure_schema(conn: sqlite3.Connection) -> None:
    """Create the offsets table and the matching index if this index has none yet."""
    conn.execute(_SCHEMA)
    conn.execute(_INDEX)


def load_file(conn: sqlite3.Connection, path: str) -> FileState | None:
    """The stored read position of one transcript file, if it was imported before."""
    row = conn.execute(
        "SELECT file_id, path, dev, ino, head_len, head_hash, offset, marker, line_no"
        " FROM transcript_files WHERE path=?",
        (path,),
    ).fetchone()
    if row is None:
        return None
    return FileState(-int(row[0]), *row[1:])


def all_files(conn: sqlite3.Connection) -> dict[str, FileState]:
    """Every imported transcript file's read position, by path."""
    rows = conn.execute(
        "SELECT file_id, path, dev, ino, head_len, head_hash, offset, marker, line_no"
        " FROM transcript_files"
    ).fetchall()
    return {r[1]: FileState(-int(r[0]), *r[1:]) for r in rows}


def restart_file(conn: sqlite3.Connection, path: str, dev: int, ino: int) -> FileState:
    """Read `path` from 0 (new, truncated or replaced): dedupe absorbs what was read before."""
    conn.execute(
        "INSERT INTO transcript_files(path, dev, ino, head_len, head_hash, offset, marker,"
        " line_no) VALUES (?,?,?,0,x'',0,x'',0) ON CONFLICT(path) DO UPDATE SET dev=excluded.dev,"
        " ino=excluded.ino, head_len=0, head_hash=x'', offset=0, marker=x'', line_no=0",
        (path, dev, ino),
    )
    state = load_file(conn, path)
    assert state is not None
    return state


def save_file(conn: sqlite3.Connection, state: FileState) -> None:
    """Store a transcript file's new read position (in the batch's transaction, I3)."""
    conn.execute(
        "UPDATE transcript_files SET head_len=?, head_hash=?, offset=?, marker=?, line_no=?"
        " WHERE file_id=?",
        (
            state.head_len,
            state.head_hash,
            state.offset,
            state.marker,
            state.line_no,
            -state.file_id,
        ),
    )


_Identity = tuple[str, str, str, str]
_KEY_COLUMNS = "ts_ns, session_id, hook_event, tool_use_id, cc_agent_id"
_IN_CHUNK = 500  # keys per query, far below SQLite's limit on parameters


def separate_keys(
    conn: sqlite3.Connection, pending: Sequence[tuple[Entry, HookPayload]]
) -> list[tuple[Entry, HookPayload]]:
    """`pending` with each imported event whose key (ts_ns, pid 0) a different imported event
    already holds, in the index or earlier in `pending`, moved to the next free ts_ns.

    An imported event's ts_ns is its record's millisecond plus 20 bits of a hash of the
    record (transcripts.imported.event_ts_ns), so two events of one millisecond share it about
    once in a million; the index's unique key would then drop the second as a duplicate. The
    same event again (a record read from a second file) keeps its key and is dropped as one.
    """
    held: dict[int, _Identity | None] = {}
    bases = sorted({e.ts_ns for e, _ in pending if e.pid == IMPORT_PID})
    for i in range(0, len(bases), _IN_CHUNK):
        chunk = bases[i : i + _IN_CHUNK]
        held.update(dict.fromkeys(chunk))
        held.update(_holders(conn, f"ts_ns IN ({','.join('?' * len(chunk))})", chunk))
    out: list[tuple[Entry, HookPayload]] = []
    for item in pending:
        entry, payload = item
        if entry.pid != IMPORT_PID:
            out.append(item)
            continue
        me = _identity(entry)
        ts_ns = entry.ts_ns
        if held.get(ts_ns, me) is None:  # nearly every event: a key nothing holds yet
            held[ts_ns] = me
            out.append(item)
            continue
        while (other := _holder(conn, held, ts_ns)) is not None and other != me:
            ts_ns += 1  # still within the record's millisecond, but for one in a million
        held[ts_ns] = me
        moved = entry if ts_ns == entry.ts_ns else msgspec.structs.replace(entry, ts_ns=ts_ns)
        out.append((moved, payload))
    return out


def _identity(e: Entry) -> _Identity:
    """What tells two imported events of one millisecond apart, their record's uuid aside.

    Not their text: the same record read again under another `max_text_chars` is the same
    event, while one session has no two prompts, stops or compactions in one millisecond.
    """
    return (e.session_id, e.hook_event, e.tool_use_id, e.cc_agent_id)


def _holders(conn: sqlite3.Connection, where: str, args: Sequence[int]) -> dict[int, _Identity]:
    rows = conn.execute(
        f"SELECT {_KEY_COLUMNS} FROM entries WHERE pid={IMPORT_PID} AND {where}", args
    ).fetchall()
    return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}


def _holder(
    conn: sqlite3.Connection, held: dict[int, _Identity | None], ts_ns: int
) -> _Identity | None:
    """The identity of the imported event holding ts_ns, if any (the index asked once)."""
    if ts_ns not in held:
        held[ts_ns] = _holders(conn, "ts_ns=?", [ts_ns]).get(ts_ns)
    return held[ts_ns]


def drop_known_events(
    conn: sqlite3.Connection, pending: Sequence[tuple[Entry, HookPayload]]
) -> list[tuple[Entry, HookPayload]]:
    """`pending` without the prompts, stops, compactions and subagent starts and stops the
    index already holds from the other source (a hook for an imported event, a transcript for
    a captured one).

    Tool events need no such query: their (session, tool_use_id, event) key is unique.
    """
    if not any(e.hook_event in MATCH_WINDOW_NS or e.hook_event in _SAME_AGENT for e, _ in pending):
        return list(pending)
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name=?", (_MATCH_INDEX,)).fetchone():
        return list(pending)  # nothing was ever imported here: there is nothing to match
    kept: list[tuple[Entry, HookPayload]] = []
    for entry, payload in pending:
        window = MATCH_WINDOW_NS.get(entry.hook_event)
        if window is not None and _is_known(conn, entry, window):
            continue
        if entry.hook_event in _SAME_AGENT and entry.cc_agent_id and _is_known_agent(conn, entry):
            continue
        kept.append((entry, payload))
    return kept


def _is_known(conn: sqlite3.Connection, e: Entry, window: int) -> bool:
    # Only an event from the other source matches (imported events have pid 0, see
    # transcripts.imported.IMPORT_PID): two equal prompts from one source are two prompts.
    other_source = "pid<>0" if e.pid == 0 else "pid=0"
    row = conn.execute(
        "SELECT 1 FROM entries WHERE session_id=? AND hook_event=? AND tool_key IS NULL"
        f" AND ts_ns BETWEEN ? AND ? AND {other_source} AND (? OR text=?) LIMIT 1",
        (
            e.session_id,
            e.hook_event,
            e.ts_ns - window,
            e.ts_ns + window,
            e.hook_event not in _SAME_TEXT,
            e.text,
        ),
    ).fetchone()
    return row is not None


def _is_known_agent(conn: sqlite3.Connection, e: Entry) -> bool:
    other_source = "pid<>0" if e.pid == 0 else "pid=0"
    row = conn.execute(
        "SELECT 1 FROM entries WHERE session_id=? AND hook_event=? AND tool_key IS NULL"
        f" AND cc_agent_id=? AND {other_source} LIMIT 1",
        (e.session_id, e.hook_event, e.cc_agent_id),
    ).fetchone()
    return row is not None
