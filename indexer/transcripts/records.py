"""Claude Code transcript lines to the hook payloads live hooks would have sent (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from indexer.models import HookPayload
from indexer.prepare.normalize import AGENT_TOOLS, reads_response
from indexer.spool.lines import repair_surrogates
from indexer.transcripts.imported import ImportedEvent, RecordError, event_ts_ns
from indexer.transcripts.sidechains import Sidechains

# Prompts whose text starts so are Claude Code's own records of a slash command or its
# output, not something the user submitted (no UserPromptSubmit fires for them).
_NOT_PROMPTS = ("<command-", "<local-command-", "[Request interrupted", "Caveat: ")


class Block(msgspec.Struct, frozen=True, gc=False):
    """One content block of a message (text, tool_use or tool_result)."""

    type: str = ""
    text: str = ""
    id: str = ""
    name: str = ""
    input: msgspec.Raw = msgspec.Raw(b"")
    tool_use_id: str = ""
    content: msgspec.Raw = msgspec.Raw(b"")  # a tool result's text or blocks, decoded if needed
    is_error: bool = False


class Message(msgspec.Struct, frozen=True, gc=False):
    content: str | list[Block] = ""


class RecordType(msgspec.Struct, frozen=True, gc=False):
    """Only the type of a transcript line."""

    type: str = ""


class TranscriptLine(msgspec.Struct, frozen=True, gc=False):
    """The fields of one transcript line that the import reads; the rest is skipped."""

    type: str = ""
    uuid: str = ""
    parentUuid: str | None = None
    sessionId: str = ""
    timestamp: str = ""
    cwd: str = ""
    agentId: str = ""
    isMeta: bool = False
    isSidechain: bool = False
    isCompactSummary: bool = False
    subtype: str | None = None
    permissionMode: str = ""
    message: Message | None = None
    toolUseResult: msgspec.Raw = msgspec.Raw(b"")
    compactMetadata: msgspec.Raw = msgspec.Raw(b"")


class AgentResult(msgspec.Struct, frozen=True, gc=False):
    """The Agent tool's result fields that name the agent that ran."""

    agentId: str = ""
    status: str = ""


class CallInput(msgspec.Struct, frozen=True, gc=False):
    subagent_type: str = ""


class CompactMetadata(msgspec.Struct, frozen=True, gc=False):
    trigger: str = ""


_EVENT_TYPES = frozenset({"user", "assistant", "system"})
_STOP_SUBTYPES = frozenset({"stop_hook_summary", "turn_duration"})
_LINE = msgspec.json.Decoder(TranscriptLine)
_TYPE = msgspec.json.Decoder(RecordType)
_ANY = msgspec.json.Decoder()
_META = msgspec.json.Decoder(CompactMetadata)
_AGENT_RESULT = msgspec.json.Decoder(AgentResult)
_CALL_INPUT = msgspec.json.Decoder(CallInput)
_ENCODE = msgspec.json.Encoder()


@dataclass
class ToolCall:
    """A tool_use waiting for its tool_result, and where its line starts."""

    name: str
    input: msgspec.Raw
    offset: int
    line_no: int


@dataclass
class Converter:
    """Turns the lines of one transcript file, in order, into hook events.

    It remembers the tool calls whose result has not been seen yet (a result names only the
    call's id; the tool and its input are on the call's line).
    """

    transcript_path: str
    agent_type: str = ""  # the subagent type of a subagents/agent-<id>.jsonl file, if known
    pending: dict[str, ToolCall] = field(default_factory=dict)
    # The main thread's latest assistant text not yet handed to a Stop (None: none seen, or
    # already given: a turn's end is marked by up to two system lines).
    last_text: str | None = None
    last_text_at: tuple[int, int] = (0, 0)  # its line's offset and the lines before it
    # 1.0.x subagents' lines, inline in this file (transcript_sidechains).
    sidechains: Sidechains = field(default_factory=Sidechains)
    # The subagent (its Claude Code id or chain id, and type) of the line being converted.
    _agent: tuple[str, str] | None = None

    def convert(self, data: bytes, offset: int, line_no: int) -> list[ImportedEvent]:
        """The hook events of one transcript line, with the payloads a hook would have sent.

        Raises RecordError for a line that is not a transcript record.
        """
        try:
            rec: TranscriptLine | None = _LINE.decode(data)  # every record the corpus holds
        except (msgspec.DecodeError, ValueError, RecursionError):
            rec = _decode_odd(data)
        if rec is None:
            return []
        if rec.agentId:  # a line of a subagent's own transcript (2.x)
            self._agent = (rec.agentId, self.agent_type)
        elif rec.isSidechain:  # a 1.0.x subagent's line, inline in the main transcript
            first = rec.type == "user" and not rec.parentUuid
            prompt = _text(_message(rec).content) if first else None
            self._agent = self.sidechains.agent_of(rec.uuid, rec.parentUuid, prompt)
        else:
            self._agent = None
        if rec.type == "user":
            return self._user(rec)
        if rec.type == "assistant":
            return self._assistant(rec, offset, line_no)
        if rec.type == "system" and rec.subtype == "compact_boundary":
            trigger = (
                _META.decode(bytes(rec.compactMetadata)).trigger if rec.compactMetadata else ""
            )
            return [self._line(rec, "PreCompact", {"trigger": trigger or "auto"})]
        if rec.type == "system" and rec.subtype in _STOP_SUBTYPES:
            return self._stop(rec)
        return []  # progress, attachments, snapshots, titles: no hook event of their own

    def oldest_pending(self, *, with_text: bool) -> tuple[int, int] | None:
        """Where the oldest line still needed later starts (offset, and the number of lines
        before it), if any: a tool call waiting for its result, or (`with_text`) the
        assistant text that the turn's end will hand to Stop."""
        held = [(c.offset, c.line_no - 1) for c in self.pending.values()]
        if with_text and self.last_text is not None:
            held.append(self.last_text_at)
        return min(held, default=None)

    def forget_older_than(self, line_no: int) -> None:
        """Give up on calls from before `line_no`: their result never came."""
        for key in [k for k, c in self.pending.items() if c.line_no < line_no]:
            del self.pending[key]

    # --- per record type ---------------------------------------------------------------------

    def _user(self, rec: TranscriptLine) -> list[ImportedEvent]:
        message = _message(rec)
        if rec.isCompactSummary:
            return [self._line(rec, "PostCompact", {"compact_summary": _text(message.content)})]
        if isinstance(message.content, str):
            return self._prompt(rec, message.content)
        results = [b for b in message.content if b.type == "tool_result"]
        if not results:
            return self._prompt(rec, _text(message.content))
        out = []
        for block in results:
            call = self.pending.pop(block.tool_use_id, None)
            if call is None:
                continue  # its call was imported from an earlier file or pass without it
            # The structured result belongs to the line's only call; copied only when read.
            needed = block.is_error or reads_response(call.name)
            response = bytes(rec.toolUseResult) if needed and len(results) == 1 else b""
            fields: dict[str, Any] = {
                "tool_name": call.name,
                "tool_use_id": block.tool_use_id,
                "tool_input": call.input,
            }
            if block.is_error:
                error = _error_text(response, block.content)
                # The payload keeps `error` as raw JSON, as a hook's payload decodes.
                fields["error"] = msgspec.Raw(_ENCODE.encode(error))
                fields["is_interrupt"] = "interrupted by user" in error
                out.append(self._line(rec, "PostToolUseFailure", fields))
            else:
                if call.name in AGENT_TOOLS and response:
                    out += self._subagent(rec, call, response, block.content)
                # A response nothing reads (a file's text, a search's hits: most of a
                # transcript's bytes) is left out rather than copied and parsed twice more.
                if needed:
                    fields["tool_response"] = msgspec.Raw(
                        response or bytes(block.content) or b"null"
                    )
                out.append(self._line(rec, "PostToolUse", fields))
        return out

    def _subagent(
        self, rec: TranscriptLine, call: ToolCall, response: bytes, content: msgspec.Raw
    ) -> list[ImportedEvent]:
        """SubagentStart and SubagentStop of an agent that ran to completion (2.x results
        name it; a background agent's end is not in its launch result)."""
        try:
            result = _AGENT_RESULT.decode(response)
        except (msgspec.DecodeError, ValueError):
            return []
        if not result.agentId or result.status not in ("", "completed"):
            return []
        try:
            agent_type = _CALL_INPUT.decode(bytes(call.input)).subagent_type
        except (msgspec.DecodeError, ValueError):
            agent_type = ""
        fields = {"agent_id": result.agentId, "agent_type": agent_type or "general-purpose"}
        stop = {**fields, "last_assistant_message": _text(content)}
        return [self._line(rec, "SubagentStart", fields), self._line(rec, "SubagentStop", stop)]

    def _stop(self, rec: TranscriptLine) -> list[ImportedEvent]:
        """The end of a main-thread turn (written when Claude Code ran the Stop hooks, 2.1+)."""
        text, self.last_text = self.last_text, None
        self.last_text_at = (0, 0)
        if text is None or rec.agentId or rec.isSidechain:
            return []
        return [self._line(rec, "Stop", {"last_assistant_message": text})]

    def _prompt(self, rec: TranscriptLine, prompt: str) -> list[ImportedEvent]:
        # A subagent's instructions (and later messages to it) come from the orchestrator:
        # no UserPromptSubmit fires for them, and its Agent call holds the prompt already.
        if self._agent is not None or rec.isMeta or not prompt.strip():
            return []
        if prompt.startswith(_NOT_PROMPTS):
            return []
        return [self._line(rec, "UserPromptSubmit", {"prompt": prompt})]

    def _assistant(self, rec: TranscriptLine, offset: int, line_no: int) -> list[ImportedEvent]:
        message = _message(rec)
        if isinstance(message.content, str):
            return []
        out = []
        for block in message.content:
            if block.type == "text" and not rec.agentId and not rec.isSidechain:
                self.last_text = block.text
                self.last_text_at = (offset, line_no - 1)
            if block.type != "tool_use" or not block.id:
                continue
            tool_input = block.input if block.input else msgspec.Raw(b"{}")
            self.pending[block.id] = ToolCall(block.name, tool_input, offset, line_no)
            # Live hooks see PreToolUse of the Agent tool only (its matcher in `ctxd init`).
            if block.name in AGENT_TOOLS:
                if self._agent is None:
                    self.sidechains.task_called(block.id, tool_input)
                fields = {
                    "tool_name": block.name,
                    "tool_use_id": block.id,
                    "tool_input": tool_input,
                }
                out.append(self._line(rec, "PreToolUse", fields))
        return out

    def _line(self, rec: TranscriptLine, event: str, fields: dict[str, Any]) -> ImportedEvent:
        payload: dict[str, Any] = {
            "session_id": rec.sessionId,
            "transcript_path": self.transcript_path,
            "cwd": rec.cwd,
            "hook_event_name": event,
        }
        if rec.permissionMode:
            payload["permission_mode"] = rec.permissionMode
        if self._agent is not None:  # a subagent's line
            payload["agent_id"], payload["agent_type"] = self._agent
        payload.update(fields)  # a SubagentStart/Stop names its agent itself
        key = f"{rec.uuid}\x00{event}\x00{fields.get('tool_use_id') or fields.get('agent_id', '')}"
        ts_ns = event_ts_ns(rec.timestamp, key)
        return ImportedEvent(ts_ns, _payload(payload), payload)


def _payload(fields: dict[str, Any]) -> HookPayload:
    """The payload that decoding the fields' JSON would give, built without that JSON (the
    fields hold what the payload keeps raw, such as `error`, as msgspec.Raw)."""
    return HookPayload(**fields)


def _decode_odd(data: bytes) -> TranscriptLine | None:
    """The record of a line that does not decode as a TranscriptLine as it stands: a type that
    gives no event, a lone surrogate escape, or no record at all (RecordError)."""
    try:
        return _decode(data)
    except (msgspec.DecodeError, ValueError) as e:
        # A lone UTF-16 surrogate escape (seen in Windows sessions) fails the whole line:
        # replaced by U+FFFD, as the spool's decoder does.
        repaired = repair_surrogates(data)
        if repaired == data:
            raise RecordError(f"not a transcript record: {e}") from e
        try:
            return _decode(repaired)
        except (msgspec.DecodeError, ValueError) as e2:
            raise RecordError(f"not a transcript record: {e2}") from e2
    except RecursionError as e:  # msgspec's own depth check: cheaper than a pre-scan
        raise RecordError("not a transcript record: JSON nested too deep") from e


def _decode(data: bytes) -> TranscriptLine | None:
    """The line's record; None for a record of a type that gives no event, whatever the
    shape of its other fields (those types change between versions and are skipped anyway).

    Only the fields the import reads are decoded; the rest of a line (a progress record's
    nested messages, a snapshot's file list) is only checked to be JSON.
    """
    try:
        return _LINE.decode(data)
    except msgspec.ValidationError:
        if _TYPE.decode(data).type in _EVENT_TYPES:
            raise
        return None


def _message(rec: TranscriptLine) -> Message:
    return rec.message if rec.message is not None else Message()


def _text(content: Any) -> str:
    if isinstance(content, msgspec.Raw):
        try:
            content = _ANY.decode(bytes(content)) if content else ""
        except (msgspec.DecodeError, ValueError):
            return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, Block):
                parts.append(b.text)
            elif isinstance(b, dict) and isinstance(b.get("text"), str):
                parts.append(b["text"])
        return "\n".join(p for p in parts if p)
    return ""


def _error_text(response: bytes, content: Any) -> str:
    """A failed call's error as the PostToolUseFailure hook gives it."""
    text = ""
    if response[:1] == b'"':
        try:
            text = str(_ANY.decode(response))
        except (msgspec.DecodeError, ValueError):
            text = ""
    text = text or _text(content)
    # The transcript prefixes the hook's error text with "Error: ".
    return text.removeprefix("Error: ")
