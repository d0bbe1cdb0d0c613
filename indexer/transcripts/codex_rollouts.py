"""Codex CLI rollouts to the hook payloads its hooks would have sent, and which rollouts to read."""

# A rollout (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl`) is one thread's
# record: `session_meta` first (a subagent's names its parent's session), then the model's
# items (`response_item`: messages, function and custom tool calls and their outputs), the
# client's events (`event_msg`: the user's message, a command's end with its exit code, the end
# of a turn) and `compacted` with the summary the next window starts from. Each record that a
# hook would have reported becomes that hook's payload, in Codex's shape, then goes through
# indexer.prepare.codex_payloads like a captured one, so an event both captured and imported has the
# same key and is stored once (tool events by call id; prompts, ends of turns, compactions
# and subagents as for Claude Code's transcripts, see indexer.transcripts.offsets).

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from indexer.models import HookPayload
from indexer.prepare.codex_outcomes import ROLLOUT_NAME
from indexer.prepare.codex_payloads import adapt, is_shell_tool, output_exit_code, shell_command
from indexer.statedir import state_dir
from indexer.transcripts.imported import ImportedEvent, RecordError, event_ts_ns

__all__ = ["ROLLOUT_NAME", "CodexConverter", "codex_rollouts", "rollout_files"]

_HEAD_BYTES = 1 << 18  # session_meta carries the base instructions: a long first line
_DECODE = msgspec.json.Decoder()
_ENCODE = msgspec.json.Encoder()
_SPAWN = "spawn_agent"
# Code mode's script runner and its wait: Codex runs no hook for them, only for the tools the
# script calls.
_CODE_MODE = frozenset({"exec", "wait"})


class _Record(msgspec.Struct, frozen=True, gc=False):
    type: str = ""
    timestamp: str = ""
    ordinal: int = -1
    payload: msgspec.Raw = msgspec.Raw(b"")


class _Meta(msgspec.Struct, frozen=True, gc=False):
    cwd: str = ""


class _Head(msgspec.Struct, frozen=True, gc=False):
    type: str = ""
    payload: _Meta | None = None


_RECORD = msgspec.json.Decoder(_Record)
_HEAD = msgspec.json.Decoder(_Head)


@dataclass
class _Call:
    tool: str
    tool_input: Any
    offset: int
    line_no: int


@dataclass
class CodexConverter:
    """Turns the lines of one rollout, in order, into the hook events Codex would have sent.

    It remembers the calls whose output has not come yet, and each command's exit code and
    output from its end event, which comes before the model's copy of the output.
    """

    transcript_path: str
    agent_type: str = ""  # unused: a subagent's rollout names its type itself
    session_id: str = ""
    thread_id: str = ""
    cwd: str = ""
    agent: dict[str, str] = field(default_factory=dict)  # a subagent's agent_id, agent_type
    pending: dict[str, _Call] = field(default_factory=dict)
    ended: dict[str, tuple[int | None, str]] = field(default_factory=dict)  # exit code, output

    def convert(self, data: bytes, offset: int, line_no: int) -> list[ImportedEvent]:
        """The hook events of one rollout line; RecordError for a line that is no record."""
        try:
            rec = _RECORD.decode(data)
            payload = _DECODE.decode(rec.payload) if rec.payload else {}
        except (msgspec.DecodeError, ValueError, RecursionError) as e:
            raise RecordError(f"not a rollout record: {e}") from e
        if not isinstance(payload, dict):
            return []
        kind = rec.type
        if kind == "session_meta":
            return self._meta(rec, payload)
        if kind == "turn_context" and isinstance(payload.get("cwd"), str):
            self.cwd = payload["cwd"]
        elif kind == "compacted":
            return self._compacted(rec, payload)
        elif kind == "event_msg":
            return self._event(rec, payload)
        elif kind == "response_item":
            return self._item(rec, payload, offset, line_no)
        return []

    def oldest_pending(self, *, with_text: bool) -> tuple[int, int] | None:
        """Where the oldest call still waiting for its output starts (offset, lines before)."""
        return min(((c.offset, c.line_no - 1) for c in self.pending.values()), default=None)

    def forget_older_than(self, line_no: int) -> None:
        """Give up on calls from before `line_no`: their output never came."""
        for key in [k for k, c in self.pending.items() if c.line_no < line_no]:
            del self.pending[key]

    # --- per record ------------------------------------------------------------------------

    def _meta(self, rec: _Record, p: dict[str, Any]) -> list[ImportedEvent]:
        self.thread_id = str(p.get("id") or "")
        self.session_id = str(p.get("session_id") or self.thread_id)
        self.cwd = str(p.get("cwd") or "")
        parent = p.get("parent_thread_id")
        if not parent or self.session_id == self.thread_id:
            return []
        spawn = _dig(p, "source", "subagent", "thread_spawn")
        role = spawn.get("agent_role") if isinstance(spawn, dict) else None
        self.agent = {"agent_id": self.thread_id, "agent_type": str(role or "default")}
        return [self._event_of(rec, "SubagentStart", {})]

    def _compacted(self, rec: _Record, p: dict[str, Any]) -> list[ImportedEvent]:
        from indexer.prepare.codex_outcomes import summary_of

        summary = summary_of(str(p.get("message") or ""))
        return [
            self._event_of(rec, "PreCompact", {"trigger": "auto"}),
            self._event_of(rec, "PostCompact", {"trigger": "auto", "compact_summary": summary}),
        ]

    def _event(self, rec: _Record, p: dict[str, Any]) -> list[ImportedEvent]:
        kind = p.get("type")
        if kind == "item_completed":
            item = p.get("item")
            if not isinstance(item, dict):
                return []
            if item.get("type") == "UserMessage":
                prompt = _text(item.get("content"))
                fields = {"prompt": prompt}
                return [self._event_of(rec, "UserPromptSubmit", fields)] if prompt else []
            item_id = item.get("id")
            if not isinstance(item_id, str) or not item_id:
                return []
            if item.get("type") == "CommandExecution":
                code = item.get("exit_code")
                output = item.get("aggregated_output")
                ended = (code if isinstance(code, int) else None,
                         output if isinstance(output, str) else "")  # fmt: skip
                if item_id in self.pending:  # the model's own call: its output comes next
                    self.ended[item_id] = ended
                    return []
                # A call a code-mode script made (`tools.exec_command`): no item of its own.
                command = shell_command({"command": item.get("command")})
                call = {"tool_name": "Bash", "tool_use_id": item_id,
                        "tool_input": {"command": command}, "tool_response": ended[1]}  # fmt: skip
                return [self._event_of(rec, "PostToolUse", call, ended[0])]
            if item.get("type") == "FileChange" and item_id not in self.pending:
                return [self._nested_patch(rec, item_id, item)]
        elif kind == "task_complete":
            text = p.get("last_agent_message")
            if isinstance(text, str) and text:
                event = "SubagentStop" if self.agent else "Stop"
                return [self._event_of(rec, event, {"last_assistant_message": text})]
        return []

    def _nested_patch(self, rec: _Record, item_id: str, item: dict[str, Any]) -> ImportedEvent:
        """A code-mode script's `tools.apply_patch`: the files it changed, as a patch names them."""
        changes = item.get("changes")
        verbs = {"add": "Add", "update": "Update", "delete": "Delete"}
        lines = [
            f"*** {verbs.get(str(c.get('type')), 'Update')} File: {path}"
            for path, c in (changes.items() if isinstance(changes, dict) else [])
            if isinstance(c, dict)
        ]
        ok = item.get("status") == "completed"
        fields = {"tool_name": "apply_patch", "tool_use_id": item_id,
                  "tool_input": {"command": "\n".join(lines)},
                  "tool_response": f"Exit code: {0 if ok else 1}\nOutput:\n"
                                   f"{item.get('stdout') or ''}"}  # fmt: skip
        return self._event_of(rec, "PostToolUse", fields)

    def _item(
        self, rec: _Record, p: dict[str, Any], offset: int, line_no: int
    ) -> list[ImportedEvent]:
        kind = p.get("type")
        call_id = p.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            return []
        if kind in ("function_call", "custom_tool_call", "local_shell_call"):
            if p.get("name") in _CODE_MODE:
                return []  # the script runs tools of its own, and those are what hooks see
            tool, tool_input = _call_of(p)
            self.pending[call_id] = _Call(tool, tool_input, offset, line_no)
            if tool == _SPAWN:  # the one tool ctxd's PreToolUse hook listens to
                fields = {"tool_name": tool, "tool_use_id": call_id, "tool_input": tool_input}
                return [self._event_of(rec, "PreToolUse", fields)]
            return []
        if kind in ("function_call_output", "custom_tool_call_output"):
            call = self.pending.pop(call_id, None)
            if call is None:
                return []  # its call was read in an earlier run, or the output is orphaned
            output = _text(p.get("output"))
            if call.tool == "update_plan" and output.startswith("unsupported call"):
                return []
            code, response = None, output
            if is_shell_tool(call.tool):
                code, raw = self.ended.pop(call_id, (None, ""))
                response = raw or output.split("\nOutput:\n", 1)[-1]
                code = output_exit_code(output) if code is None else code
            fields = {"tool_name": call.tool, "tool_use_id": call_id,
                      "tool_input": call.tool_input, "tool_response": response}  # fmt: skip
            return [self._event_of(rec, "PostToolUse", fields, code)]
        return []

    def _event_of(self, rec: _Record, event: str, fields: dict[str, Any],
                  exit_code: int | None = None) -> ImportedEvent:  # fmt: skip
        payload: dict[str, Any] = {
            "session_id": self.session_id,
            "transcript_path": self.transcript_path,
            "cwd": self.cwd,
            "hook_event_name": event,
            **self.agent,
            **fields,
        }
        raw: dict[str, Any] = {
            k: msgspec.Raw(_ENCODE.encode(v)) if k in _RAW else v for k, v in payload.items()
        }
        adapted = adapt(HookPayload(**raw), exit_code)
        ordinal = rec.ordinal if rec.ordinal >= 0 else hash(rec.timestamp)
        key = f"{self.thread_id}\x00{ordinal}\x00{event}\x00{fields.get('tool_use_id', '')}"
        return ImportedEvent(event_ts_ns(rec.timestamp, key), adapted, payload)


_RAW = frozenset({"tool_input", "tool_response"})


def _call_of(p: dict[str, Any]) -> tuple[str, Any]:
    """(tool name as Codex's hooks name it, tool_input as they give it) of a call item."""
    kind, name = p.get("type"), str(p.get("name") or "")
    if kind == "local_shell_call":
        action = p.get("action")
        command = action.get("command") if isinstance(action, dict) else None
        return "Bash", {"command": command}
    if kind == "custom_tool_call":
        return name, {"command": p.get("input", "")}
    try:
        args = _DECODE.decode(str(p.get("arguments") or "{}").encode())
    except (msgspec.DecodeError, ValueError):
        args = {}
    if name.endswith(_SPAWN):
        return _SPAWN, args
    namespace = p.get("namespace")
    tool = f"{namespace}{name}" if isinstance(namespace, str) and namespace else name
    if is_shell_tool(tool) and isinstance(args, dict):
        return "Bash", {"command": args.get("cmd", args.get("command"))}
    return tool, args


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [c.get("text") for c in content if isinstance(c, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


# --- which rollouts ---------------------------------------------------------------------------


def codex_rollouts(codex_home: Path) -> list[Path]:
    """Every rollout under `<codex_home>/sessions`, oldest first."""
    root = codex_home / "sessions"
    found = [p for p in root.rglob("rollout-*.jsonl") if ROLLOUT_NAME.fullmatch(p.name)]
    return sorted(found, key=lambda p: (p.name, str(p)))


def rollout_files(codex_home: Path, state_root: Path | None) -> list[Path]:
    """The rollouts of sessions whose events belong to `state_root` (where each ran, by the
    hook's state-directory rule); every rollout when `state_root` is None."""
    files = codex_rollouts(codex_home)
    if state_root is None:
        return files
    want = os.path.abspath(state_root)
    return [p for p in files if (cwd := _started_in(p)) and _state_of(cwd) == want]


def _state_of(cwd: str) -> str:
    # Codex runs its hooks where the session runs, with no $CLAUDE_PROJECT_DIR.
    return os.path.abspath(state_dir({}, cwd))


def _started_in(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        head = os.read(fd, _HEAD_BYTES)
    finally:
        os.close(fd)
    line = head.split(b"\n", 1)[0]
    try:
        rec = _HEAD.decode(line)
    except (msgspec.DecodeError, ValueError):
        return ""
    return rec.payload.cwd if rec.type == "session_meta" and rec.payload is not None else ""
