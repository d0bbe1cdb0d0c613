"""An entry's view line (HookData-compatible JSON, UTC ISO time) and the view files it goes to."""

from __future__ import annotations

import time
from pathlib import Path

import msgspec

from indexer.index.store import StoredEntry
from indexer.models import Entry, ViewLine
from indexer.paths import StatePaths, check_session_id, is_valid_view_name

__all__ = [
    "AGENT_INSTRUCTIONS",
    "ALL_AGENT_INSTRUCTIONS",
    "INSTRUCTION_EVENTS",
    "ViewKey",
    "encode_line",
    "iso_utc",
    "view_files",
    "view_keys",
    "view_line",
    "view_path",
]

INSTRUCTION_EVENTS = frozenset({"agent_start", "agent_complete", "agent_launched", "agent_failed"})
AGENT_INSTRUCTIONS = "agent-instructions.jsonl"
ALL_AGENT_INSTRUCTIONS = "all-agent-instructions.jsonl"
_ENCODER = msgspec.json.Encoder()


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


def encode_line(se: StoredEntry) -> bytes:
    """The bytes of one entry's view line, b"\\n" included."""
    return _ENCODER.encode(view_line(se.id, se.entry)) + b"\n"


# A view file by (its folder, its name): the folder is a session id, or "" for the sessions
# folder itself (the project-wide instruction view). Strings, not Paths: building a Path per
# entry cost more than formatting its line.
ViewKey = tuple[str, str]


def view_files(paths: StatePaths, e: Entry) -> list[Path]:
    """Every view file an entry belongs to."""
    return [view_path(paths, key) for key in view_keys(e)]


def view_keys(e: Entry) -> tuple[ViewKey, ...]:
    """The (folder, file name) keys of every view file an entry belongs to."""
    check_session_id(e.session_id)
    name = e.agent_id if e.agent_id != "main" and is_valid_view_name(e.agent_id) else "main"
    own = (e.session_id, f"{name}.jsonl")
    if e.event in INSTRUCTION_EVENTS:
        return own, (e.session_id, AGENT_INSTRUCTIONS), ("", ALL_AGENT_INSTRUCTIONS)
    return (own,)


def view_path(paths: StatePaths, key: ViewKey) -> Path:
    """The path of the view file `key` names."""
    folder, file = key
    return (paths.sessions / folder if folder else paths.sessions) / file
