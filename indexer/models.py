"""msgspec Structs: the spool envelope, the hook payload fields read, and the stored Entry."""

from __future__ import annotations

from typing import Any

import msgspec

# Spool envelope format version written by the hook (ARCHITECTURE §4). A reader accepts only
# the versions it knows; a new version gets a new number, never a changed meaning.
ENVELOPE_VERSION = 1


class Envelope(msgspec.Struct, frozen=True, gc=False):
    """One spool line: `{"ctxd":1,"ts_ns":…,"pid":…,"event":<raw hook JSON>}`.

    A line the hook wrote for another client than Claude Code names it before the event
    (`"host":"codex"`); without it (every line older than hosts) the host is Claude Code.
    """

    ctxd: int
    ts_ns: int
    pid: int
    event: msgspec.Raw
    host: str = ""


class HookPayload(msgspec.Struct, frozen=True, gc=False):
    """The fields of a Claude Code hook payload that ctxd reads; unknown fields are ignored.

    Every field has a default so that payloads of older and newer Claude Code versions decode;
    large, tool-specific parts stay raw and are decoded lazily by the normalizer.
    """

    session_id: str = ""
    hook_event_name: str = ""
    cwd: str = ""
    transcript_path: str = ""
    permission_mode: str = ""
    agent_id: str = ""
    agent_type: str = ""
    tool_name: str = ""
    tool_use_id: str = ""
    tool_input: msgspec.Raw = msgspec.Raw(b"")
    tool_response: msgspec.Raw = msgspec.Raw(b"")
    error: msgspec.Raw = msgspec.Raw(b"")
    is_interrupt: bool = False
    duration_ms: float | None = None
    prompt: str = ""
    session_title: str = ""
    source: str = ""
    reason: str = ""
    trigger: str = ""
    custom_instructions: str | None = None
    compact_summary: str = ""
    last_assistant_message: str = ""
    message: str = ""
    title: str = ""
    notification_type: str = ""
    model: msgspec.Raw = msgspec.Raw(b"")
    task_id: str = ""
    task_subject: str = ""
    task_description: str = ""
    agent_transcript_path: str = ""
    # ctxd's own explicit events (`ctxd emit`) carry their record under this key.
    ctxd_record: msgspec.Raw = msgspec.Raw(b"")


class Entry(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """One normalized, redacted, attributed event as stored in the index.

    `file_id`/`offset`/`line_no` locate the spool line it came from (its source position);
    `ts_ns`/`pid` identify the hook invocation that wrote it.
    """

    file_id: int
    offset: int
    line_no: int
    ts_ns: int
    pid: int
    session_id: str
    hook_event: str
    event: str
    agent_id: str = "main"
    agent_type: str = ""
    cc_agent_id: str = ""
    tool_name: str = ""
    tool_use_id: str = ""
    description: str = ""
    instruction: str = ""
    output_summary: str = ""
    error: str = ""
    files: tuple[str, ...] = ()
    text: str = ""
    cwd: str = ""
    detail: msgspec.Raw = msgspec.Raw(b"")
    # The client that sent the event ("" Claude Code, "codex"): kept in the session catalog,
    # not in the entry's row (an entry read back from the index has "").
    host: str = ""


class ViewLine(msgspec.Struct, frozen=True, omit_defaults=True):
    """A per-agent view line: seed 000's HookData fields plus ctxd's extras.

    `seq` is the entry's id in the index; it makes view catch-up after a crash exact.
    """

    event: str
    agent_type: str
    agent_id: str
    description: str
    session_id: str
    timestamp: str
    seq: int
    instruction: str = ""
    output_summary: str = ""
    tool_name: str = ""
    tool_use_id: str = ""
    hook_event: str = ""
    files: tuple[str, ...] = ()
    error: str = ""


def to_builtins(value: Any) -> Any:
    """Convert Structs to plain dicts and lists (for json output)."""
    return msgspec.to_builtins(value)
