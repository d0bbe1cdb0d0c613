"""Payload -> Entry: event kinds, descriptions, files touched, clipped text and detail (pure)."""

from __future__ import annotations

from typing import Any

import msgspec

from indexer.models import Entry, HookPayload
from indexer.prepare.codex_payloads import PATCH_TOOL, patch_files

AGENT_TOOLS = frozenset({"Agent", "Task"})  # `Task` is the Agent tool's name before 2.1.63
FILE_TOOLS = frozenset({"Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "NotebookRead"})
# Codex edits files with one apply_patch call, whose files are named inside the patch.
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", PATCH_TOOL})
# Tools whose (small) structured response the summarizer needs besides the input.
_RESPONSE_TOOLS = frozenset({"TaskCreate", "TaskUpdate", "TaskList", "TaskGet"})
OUTPUT_SUMMARY_CHARS = 1000
DESCRIPTION_CHARS = 500
ERROR_CHARS = 4000

_SIMPLE_EVENTS = {
    "SessionStart": "session_start",
    "SessionEnd": "session_end",
    "UserPromptSubmit": "prompt",
    "SubagentPrompt": "subagent_prompt",  # Codex: a subagent's task (codex_payloads)
    "UserPromptExpansion": "prompt_expansion",
    "Stop": "stop",
    "StopFailure": "stop_failure",
    "SubagentStart": "subagent_start",
    "SubagentStop": "subagent_stop",
    "PreCompact": "pre_compact",
    "PostCompact": "post_compact",
    "Notification": "notification",
    "TaskCreated": "task_created",
    "TaskCompleted": "task_completed",
    "PermissionRequest": "permission_request",
    "PermissionDenied": "permission_denied",
    "PostToolBatch": "tool_batch",
}
EXPLICIT_KINDS = frozenset(
    {"decision", "failure", "constraint", "feature_start", "feature_complete", "note"}
)
EXPLICIT_HOOK_EVENT = "CtxdEmit"

_ANY = msgspec.json.Decoder()
_ENCODE = msgspec.json.Encoder()


class PayloadError(ValueError):
    """A decoded payload that cannot become an entry (for example no session id)."""


class ToolInput(msgspec.Struct, frozen=True, gc=False):
    """The tool_input fields ctxd summarises; everything else stays in `detail`."""

    file_path: str = ""
    notebook_path: str = ""
    command: str = ""
    description: str = ""
    prompt: str = ""
    subagent_type: str = ""
    pattern: str = ""
    path: str = ""
    url: str = ""
    query: str = ""
    subject: str = ""
    taskId: str = ""
    name: str = ""
    patch: str = ""  # Codex's apply_patch (indexer.prepare.codex_payloads)


class ToolResponse(msgspec.Struct, frozen=True, gc=False):
    """The tool_response fields ctxd reads (Agent result, Bash output)."""

    status: str = ""
    agentId: str = ""
    content: Any = None
    stdout: str = ""
    stderr: str = ""
    interrupted: bool = False
    filePath: str = ""


_INPUT = msgspec.json.Decoder(ToolInput)
_RESPONSE = msgspec.json.Decoder(ToolResponse)
_EMPTY_INPUT = ToolInput()
_EMPTY_RESPONSE = ToolResponse()


def reads_response(tool_name: str) -> bool:
    """Whether an entry uses anything of this tool's `tool_response` (most tools: nothing)."""
    return tool_name in AGENT_TOOLS or tool_name == "Bash" or tool_name in _RESPONSE_TOOLS


def decode_input(raw: msgspec.Raw) -> ToolInput:
    """Decode the summarised fields of a tool_input; lenient, never raises."""
    data = bytes(raw)
    if not data or data[:1] != b"{":
        return _EMPTY_INPUT
    try:
        return _INPUT.decode(data)
    except (msgspec.DecodeError, ValueError):
        return _EMPTY_INPUT


def _decode_response(raw: msgspec.Raw) -> ToolResponse:
    data = bytes(raw)
    if not data or data[:1] != b"{":
        return _EMPTY_RESPONSE
    try:
        return _RESPONSE.decode(data)
    except (msgspec.DecodeError, ValueError):
        return _EMPTY_RESPONSE


def event_kind(p: HookPayload, response: ToolResponse) -> str:
    """The normalized event kind of a payload (ARCHITECTURE §6)."""
    name = p.hook_event_name
    if is_internal_stop(p):
        return "compact_summary" if "<summary>" in p.last_assistant_message else "fork_stop"
    if name in _SIMPLE_EVENTS:
        return _SIMPLE_EVENTS[name]
    is_agent = p.tool_name in AGENT_TOOLS
    if name == "PreToolUse":
        return "agent_start" if is_agent else "tool_use"
    if name == "PostToolUse":
        if not is_agent:
            return "tool_result"
        launched = response.status in ("async_launched", "remote_launched")
        return "agent_launched" if launched else "agent_complete"
    if name == "PostToolUseFailure":
        return "agent_failed" if is_agent else "tool_failure"
    return "other"


def is_internal_stop(p: HookPayload) -> bool:
    """A `SubagentStop` of Claude Code's own forked request, not of a subagent.

    The compaction (and the away-summary recap) run as a fork that fires `SubagentStop` with a
    fresh `agent_id`, an empty `agent_type`, no start and no Agent call; a user's subagent
    always has a type. Attributing it would create a phantom agent (or, worse, complete the
    oldest running background agent).
    """
    return p.hook_event_name == "SubagentStop" and bool(p.agent_id) and not p.agent_type


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, with a visible mark when cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 14)] + " …[truncated]"


def tool_description(tool: str, ti: ToolInput) -> str:
    """A one-line description of a tool call for views and summaries."""
    if ti.description:
        return ti.description
    target = (
        ti.file_path
        or ti.notebook_path
        or ti.command
        or ti.pattern
        or ti.url
        or ti.query
        or ti.subject
        or ti.path
    )
    return f"{tool} {target}".strip() if target else tool


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [c.get("text", "") for c in content if isinstance(c, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def error_text(raw: msgspec.Raw) -> str:
    """PostToolUseFailure `error` as text (a string in practice; tolerate other JSON)."""
    data = bytes(raw)
    if not data:
        return ""
    try:
        value = _ANY.decode(data)
    except (msgspec.DecodeError, ValueError):
        return data.decode("utf-8", "replace")
    return value if isinstance(value, str) else _ENCODE.encode(value).decode()


def _clip_json(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return clip(value, limit)
    if isinstance(value, list):
        return [_clip_json(v, limit) for v in value[:200]]
    if isinstance(value, dict):
        return {k: _clip_json(v, limit) for k, v in value.items()}
    return value


def bounded_raw(raw: bytes, max_bytes: int) -> bytes:
    """`raw` JSON as is if small, else re-encoded with long strings clipped."""
    if len(raw) <= max_bytes:
        return raw
    try:
        value = _ANY.decode(raw)
    except (msgspec.DecodeError, ValueError):
        return b'"[unparseable]"'
    out = _ENCODE.encode(_clip_json(value, 1000))
    return out if len(out) <= max_bytes * 4 else _ENCODE.encode(_clip_json(value, 100))


def _detail(p: HookPayload, max_bytes: int) -> bytes:
    if p.tool_name:
        tool_input = bytes(p.tool_input) or b"null"
        parts = [b'{"input":', bounded_raw(tool_input, max_bytes)]
        response = bytes(p.tool_response)
        if p.tool_name in _RESPONSE_TOOLS and response and len(response) <= max_bytes:
            parts += [b',"response":', response]
        parts.append(b"}")
        return b"".join(parts)
    if p.hook_event_name == EXPLICIT_HOOK_EVENT:
        return bounded_raw(bytes(p.ctxd_record) or b"{}", max_bytes)
    fields = {
        k: v
        for k, v in (
            ("source", p.source),
            ("reason", p.reason),
            ("trigger", p.trigger),
            ("session_title", p.session_title),
            ("notification_type", p.notification_type),
            ("task_id", p.task_id),
            ("task_subject", p.task_subject),
            ("task_description", clip(p.task_description, 2000)),
            ("permission_mode", p.permission_mode),
        )
        if v
    }
    return _ENCODE.encode(fields) if fields else b""


def normalize(
    p: HookPayload,
    *,
    ts_ns: int,
    pid: int,
    file_id: int,
    offset: int,
    line_no: int,
    max_text_chars: int,
    max_detail_bytes: int,
) -> Entry:
    """Build the unattributed entry of one payload (agent fields are set by attribution)."""
    if not p.session_id:
        raise PayloadError("payload has no session_id")
    if not p.hook_event_name:
        raise PayloadError("payload has no hook_event_name")
    ti = decode_input(p.tool_input) if p.tool_name else _EMPTY_INPUT
    is_agent_tool = p.tool_name in AGENT_TOOLS
    response = (
        _decode_response(p.tool_response)
        if p.tool_response and (is_agent_tool or p.tool_name == "Bash")
        else _EMPTY_RESPONSE
    )
    kind = event_kind(p, response)
    internal = kind in ("compact_summary", "fork_stop")  # belongs to main, not to an agent
    description = instruction = output = error = text = ""
    files: tuple[str, ...] = ()
    if p.tool_name:
        description = tool_description(p.tool_name, ti)
        path = ti.file_path or ti.notebook_path
        if path and p.tool_name in FILE_TOOLS:
            files = (path,)
        elif p.tool_name == PATCH_TOOL:
            files = patch_files(ti.patch, p.cwd)
            description = f"{PATCH_TOOL} {' '.join(files)}".strip()
        if is_agent_tool:
            instruction = clip(ti.prompt, max_text_chars)
            output = _content_text(response.content)
        elif p.tool_name == "Bash" and (response.stdout or response.stderr):
            output = response.stdout or response.stderr
        if p.hook_event_name == "PostToolUseFailure":
            error = clip(error_text(p.error), ERROR_CHARS)
            if p.is_interrupt:
                error = error or "interrupted"
        elif response.interrupted:
            error = "interrupted"
    elif kind in ("prompt", "subagent_prompt"):
        text = p.prompt
        description = clip(p.prompt.strip().split("\n", 1)[0], DESCRIPTION_CHARS)
    elif kind in ("stop", "subagent_stop", "stop_failure", "compact_summary", "fork_stop"):
        text = p.last_assistant_message
        output = p.last_assistant_message
        first_line = p.last_assistant_message.strip().split("\n", 1)[0]
        description = clip(first_line, 200) or kind.replace("_", " ")
        if kind == "compact_summary":
            description = "compaction summary"
    elif kind == "subagent_start":
        description = f"subagent started ({p.agent_type or 'agent'})"
    elif kind == "post_compact":
        text = p.compact_summary
        description = f"compaction ({p.trigger or 'unknown'})"
    elif kind == "pre_compact":
        text = p.custom_instructions or ""
        description = f"compaction requested ({p.trigger or 'unknown'})"
    elif kind == "notification":
        text = p.message
        description = clip(p.message, DESCRIPTION_CHARS)
    elif kind in ("task_created", "task_completed"):
        description = p.task_subject
        text = p.task_description
    elif kind == "session_start":
        description = f"session {p.source or 'start'}"
    elif kind == "session_end":
        description = f"session end ({p.reason or 'unknown'})"
    elif p.hook_event_name == EXPLICIT_HOOK_EVENT:
        kind, description, text = _explicit(p)
    return Entry(
        file_id=file_id,
        offset=offset,
        line_no=line_no,
        ts_ns=ts_ns,
        pid=pid,
        session_id=p.session_id,
        hook_event=p.hook_event_name,
        event=kind,
        # For the Agent tool the entry is about the agent it starts, not the caller.
        agent_type=(ti.subagent_type or "general-purpose") if is_agent_tool else p.agent_type,
        cc_agent_id=response.agentId if is_agent_tool else "" if internal else p.agent_id,
        tool_name=p.tool_name,
        tool_use_id=p.tool_use_id,
        description=clip(description, DESCRIPTION_CHARS),
        instruction=instruction,
        output_summary=clip(output, OUTPUT_SUMMARY_CHARS),
        error=error,
        files=files,
        text=clip(text, max_text_chars),
        cwd=p.cwd,
        detail=msgspec.Raw(_detail(p, max_detail_bytes)),
    )


def _explicit(p: HookPayload) -> tuple[str, str, str]:
    try:
        record = _ANY.decode(bytes(p.ctxd_record) or b"{}")
    except (msgspec.DecodeError, ValueError) as e:
        raise PayloadError(f"ctxd_record is not JSON: {e}") from e
    if not isinstance(record, dict):
        raise PayloadError("ctxd_record must be an object")
    kind = str(record.get("kind", ""))
    if kind not in EXPLICIT_KINDS:
        raise PayloadError(f"unknown explicit event kind {kind!r}")
    summary = record.get("description") or record.get("decision") or record.get("name") or ""
    return kind, str(summary), str(record.get("description", "") or "")
