"""Codex CLI hook payloads in the shapes the normalizer knows (Claude Code's), pure."""

# Codex sends Claude Code's event names and fields, but its tools are its own: a shell call
# (`exec_command`, in older versions `shell`, `local_shell` or `shell_command`) arrives as
# tool "Bash" with the command's output as a bare string and no exit code, a failed command as
# a PostToolUse too (Codex has no PostToolUseFailure); file edits are one `apply_patch` whose
# input is the patch text; a subagent starts with `spawn_agent`, which answers at once with
# the new agent's id; the plan is `update_plan`. `adapt` maps each onto the Claude Code
# payload with the same meaning (Bash, PostToolUseFailure "Exit code N", Agent launched in the
# background, TodoWrite), so that everything downstream reads one shape. The exit code of a
# shell call comes from Codex's rollout of the session (indexer.prepare.codex_outcomes reads it).
# Verified against @openai/codex 0.171.0 (tests/e2e/test_real_codex.py).

from __future__ import annotations

import os
import re
import shlex
from typing import Any

import msgspec

from indexer.models import HookPayload

__all__ = [
    "PATCH_TOOL",
    "SUBAGENT_PROMPT",
    "adapt",
    "is_shell_tool",
    "output_exit_code",
    "patch_files",
    "shell_command",
]

PATCH_TOOL = "apply_patch"
SUBAGENT_PROMPT = "SubagentPrompt"  # a Codex subagent's UserPromptSubmit
_SHELL_TOOLS = frozenset(
    {"Bash", "shell", "local_shell", "shell_command", "exec_command", "container.exec"}
)
_SPAWN = "spawn_agent"  # also namespaced, as `multi_agent_v1spawn_agent` and the like
_PLAN = "update_plan"
# The first line of an apply_patch result, and of a shell result in some versions.
_EXIT_LINE = re.compile(r"^(?:Exit code:?|Process exited with code) (-?\d+)", re.MULTILINE)
_PATCH_FILE = re.compile(
    r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$"
)
_ANY = msgspec.json.Decoder()
_ENCODE = msgspec.json.Encoder()


def adapt(p: HookPayload, exit_code: int | None = None) -> HookPayload:
    """`p` (a Codex payload) in the Claude Code shape with the same meaning; `exit_code` is a
    shell call's exit status when known (Codex's payload does not carry it)."""
    tool = p.tool_name
    if not tool:
        if p.hook_event_name == "UserPromptSubmit" and p.agent_id:
            # A subagent's task, as its spawn_agent call gave it: not something the user said.
            return msgspec.structs.replace(p, hook_event_name=SUBAGENT_PROMPT)
        return p
    if is_shell_tool(tool):
        return _shell(p, exit_code)
    if tool == PATCH_TOOL:
        return _patch(p)
    if tool.endswith(_SPAWN):
        return _spawn(p)
    if tool == _PLAN:
        return _plan(p)
    return p


def is_shell_tool(tool_name: str) -> bool:
    """Whether a Codex tool runs a shell command."""
    return tool_name in _SHELL_TOOLS


def shell_command(tool_input: Any) -> str:
    """The command line of a shell call's input (a string, or an argv list in older versions)."""
    if not isinstance(tool_input, dict):
        return ""
    command = tool_input.get("command", tool_input.get("cmd", ""))
    if isinstance(command, list) and all(isinstance(a, str) for a in command):
        # `["bash", "-lc", "<script>"]` is how older versions ran every command.
        if len(command) == 3 and command[1] in ("-lc", "-c"):
            return str(command[2])
        return shlex.join(command)
    return str(command) if isinstance(command, str) else ""


def output_exit_code(output: str) -> int | None:
    """The exit code a tool result states on one of its first lines ("Exit code: 1")."""
    m = _EXIT_LINE.search(output[:400])
    return int(m[1]) if m else None


def patch_files(patch: str, cwd: str) -> tuple[str, ...]:
    """The files an apply_patch patch adds, updates, deletes or moves to (absolute)."""
    found: dict[str, None] = {}
    for line in patch.splitlines():
        m = _PATCH_FILE.match(line)
        name = m and (m[1] or m[2])
        if name:
            path = name if os.path.isabs(name) or not cwd else os.path.join(cwd, name)
            found.setdefault(os.path.normpath(path), None)
    return tuple(found)


# --- per tool ---------------------------------------------------------------------------------


def _shell(p: HookPayload, exit_code: int | None) -> HookPayload:
    tool_input = _decoded(p.tool_input)
    fields: dict[str, Any] = {"tool_name": "Bash"}
    command = shell_command(tool_input)
    if command and not (isinstance(tool_input, dict) and tool_input.get("command") == command):
        kept = {k: v for k, v in tool_input.items() if k not in ("command", "cmd")}
        fields["tool_input"] = _raw({"command": command, **kept})
    if p.hook_event_name != "PostToolUse":
        return msgspec.structs.replace(p, **fields)
    output, code = _shell_result(_decoded(p.tool_response))
    code = exit_code if code is None else code
    if code:
        return _failed(p, fields, code, output)
    fields["tool_response"] = _raw({"stdout": output})
    return msgspec.structs.replace(p, **fields)


def _shell_result(response: Any) -> tuple[str, int | None]:
    """(output, exit code if the result states it) of a shell call's tool_response."""
    if isinstance(response, str):
        return response, None
    if not isinstance(response, dict):
        return "", None
    parts = [response.get(k) for k in ("output", "stdout", "stderr", "aggregated_output")]
    output = "\n".join(s for s in parts if isinstance(s, str) and s)
    code = response.get("exit_code", response.get("exitCode"))
    return output, code if isinstance(code, int) and not isinstance(code, bool) else None


def _patch(p: HookPayload) -> HookPayload:
    # The patch is kept as `patch` (Codex sends it as `command`): it is no command line.
    tool_input = _decoded(p.tool_input)
    fields: dict[str, Any] = {}
    if isinstance(tool_input, dict) and "command" in tool_input:
        kept = {k: v for k, v in tool_input.items() if k != "command"}
        fields["tool_input"] = _raw({"patch": tool_input["command"], **kept})
    if p.hook_event_name != "PostToolUse":
        return msgspec.structs.replace(p, **fields)
    response = _decoded(p.tool_response)
    output = response if isinstance(response, str) else ""
    code = output_exit_code(output) if output else None
    if code:
        return _failed(p, fields, code, output.split("Output:\n", 1)[-1])
    return msgspec.structs.replace(p, **fields)


def _failed(p: HookPayload, fields: dict[str, Any], code: int, output: str) -> HookPayload:
    """The PostToolUseFailure Claude Code sends for a failed call ("Exit code N", output)."""
    error = f"Exit code {code}\n{output}".rstrip("\n")
    return msgspec.structs.replace(
        p,
        hook_event_name="PostToolUseFailure",
        error=_raw(error),
        tool_response=msgspec.Raw(b""),
        **fields,
    )


def _spawn(p: HookPayload) -> HookPayload:
    tool_input = _decoded(p.tool_input)
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    prompt = tool_input.get("message")
    if not isinstance(prompt, str):
        items = tool_input.get("items")
        items = items if isinstance(items, list) else []
        texts = [i.get("text") for i in items if isinstance(i, dict)]
        prompt = "\n".join(t for t in texts if isinstance(t, str))
    agent_type = tool_input.get("agent_type") or tool_input.get("role") or "default"
    # What the call is for: the prompt's first line that is not the agent's name.
    lines = [ln.strip() for ln in prompt.splitlines() if ln.strip()]
    about = next((ln for ln in lines if not ln.startswith("AgentId:")), "")[:120]
    fields: dict[str, Any] = {
        "tool_name": "Agent",
        "tool_input": _raw(
            {"prompt": prompt, "subagent_type": str(agent_type), "description": about}
        ),
    }
    if p.hook_event_name == "PostToolUse":
        response = _decoded(p.tool_response)
        if isinstance(response, str):  # Codex sends the tool's JSON text
            response = _decoded(msgspec.Raw(response.encode()))
        agent = response.get("agent_id", "") if isinstance(response, dict) else ""
        # The call returns as soon as the agent starts: Claude Code's background launch.
        fields["tool_response"] = _raw({"status": "async_launched", "agentId": str(agent)})
    return msgspec.structs.replace(p, **fields)


def _plan(p: HookPayload) -> HookPayload:
    tool_input = _decoded(p.tool_input)
    steps = tool_input.get("plan") if isinstance(tool_input, dict) else None
    todos = [
        {"content": s["step"], "status": str(s.get("status", "pending")), "activeForm": s["step"]}
        for s in steps if isinstance(s, dict) and isinstance(s.get("step"), str)
    ] if isinstance(steps, list) else []  # fmt: skip
    return msgspec.structs.replace(p, tool_name="TodoWrite", tool_input=_raw({"todos": todos}))


def _decoded(raw: msgspec.Raw) -> Any:
    data = bytes(raw)
    if not data:
        return None
    try:
        return _ANY.decode(data)
    except (msgspec.DecodeError, ValueError):
        return None


def _raw(value: Any) -> msgspec.Raw:
    return msgspec.Raw(_ENCODE.encode(value))
