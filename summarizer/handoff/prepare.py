"""At the Agent call (PreToolUse): compose what the subagent will be handed, and queue it.

The text comes from files prebuilt earlier, so this costs a few file reads: the agent's own
account of its last run (written when that run ended) and the cached task's role export.
Everything is kept within the handoff budget without loading the tokenizer, which a tool
event's hook must never do (I1): a token is at least one UTF-8 byte, so a text of at most
`max_tokens` bytes is within `max_tokens` tokens. The accounts are counted exactly with
tiktoken where they are built (`within_budget`, off the hook path); a task export longer than
the budget in bytes is cut at that many bytes.
"""

from __future__ import annotations

from summarizer.handoff.names import Names, names_in
from summarizer.handoff.queue import ACCOUNTS_DIR, HANDOFF_DIR, put, read_under
from summarizer.resume.fastjson import loads

__all__ = ["MAX_TOKENS", "agent_call", "compose", "within_budget", "within_bytes"]

MAX_TOKENS = 1500  # the default of `[resume] subagent_max_tokens`
_TASKS_DIR = "tasks"


def agent_call(payload: bytes, base: str, max_tokens: int | None = None) -> None:
    """Queue the handoff for the subagent this Agent call (PreToolUse) starts.

    The budget is `[resume] subagent_max_tokens` unless `max_tokens` is given.
    """
    if max_tokens is None:
        from summarizer.resume.hook_settings import read_settings

        max_tokens = read_settings(base).subagent_max_tokens
    event = loads(payload)
    tool_input = event.get("tool_input") or {}
    if not isinstance(tool_input, dict):
        return
    prompt = str(tool_input.get("prompt") or "")
    agent_type = str(tool_input.get("subagent_type") or "general-purpose")
    names = names_in(prompt)
    text = compose(base, names, max_tokens)
    session_id = str(event.get("session_id", ""))
    tool_use_id = str(event.get("tool_use_id", ""))
    # The instruction is kept only for a named agent's account, and redacted like everything
    # ctxd stores outside the spool (a prompt may carry a secret; redaction costs tens of ms,
    # so unnamed agents skip it).
    instruction = _redacted(prompt)[:2000] if names.agent_id else ""
    put(base, session_id, agent_type, tool_use_id, text, names.agent_id or "", instruction)


def _redacted(text: str) -> str:
    from indexer import redact_text

    return redact_text(text)


def compose(base: str, names: Names, max_tokens: int = MAX_TOKENS) -> str:
    """The handoff text for a subagent with these names ("" when they name nothing known)."""
    if names.is_empty:
        return ""
    parts: list[str] = []
    if names.task_id and names.role:
        parts += _task_parts(base, names.task_id, names.role)
    if names.agent_id:
        account = _read_text(base, HANDOFF_DIR, ACCOUNTS_DIR, names.agent_id + ".md")
        if account:
            parts.append(account.strip())
    return within_bytes("\n\n".join(parts), max_tokens)


def within_bytes(text: str, max_tokens: int) -> str:
    """`text` within `max_tokens` UTF-8 bytes (so within as many tokens), cut at a line end."""
    data = text.encode("utf-8")
    if len(data) <= max_tokens:
        return text
    cut = data[: max(0, max_tokens - 4)].decode("utf-8", "ignore")  # room for "\n…" (4 bytes)
    line_end = cut.rfind("\n")
    return (cut[:line_end] if line_end > len(cut) // 2 else cut).rstrip() + "\n…"


def within_budget(text: str, max_tokens: int) -> str:
    """`text`, cut at a line end if needed, within `max_tokens` tiktoken tokens (loads the
    tokenizer when the text is longer in bytes: never call it on the hook path)."""
    if len(text.encode("utf-8")) <= max_tokens:
        return text
    from summarizer.common.tokens import get_counter

    counter = get_counter()
    if counter.fits(text, max_tokens):
        return text
    cut = counter.truncate(text, max_tokens - 1)
    line_end = cut.rfind("\n")
    return (cut[:line_end] if line_end > len(cut) // 2 else cut).rstrip() + "\n…"


def _task_parts(base: str, task_id: str, role: str) -> list[str]:
    export = _read_text(base, _TASKS_DIR, task_id, f"context-{role}.json")
    if not export:
        return []
    parts = [
        f"ctxd task context for {task_id}, role {role} (context-{role}.json):\n{export.strip()}"
    ]
    previous = _previous_snapshot(base, task_id, export)
    if previous:
        parts.append(previous)
    return parts


def _previous_snapshot(base: str, task_id: str, export: str) -> str:
    """A summary of the previous role's working-tree snapshot, from the task's context.json."""
    try:
        previous = loads(export).get("previous_role")
        context = loads(_read_text(base, _TASKS_DIR, task_id, "context.json") or "{}")
    except (ValueError, AttributeError):
        return ""
    if not isinstance(previous, str) or not isinstance(context, dict):
        return ""
    coordination = (context.get("coordination") or {}).get(previous) or {}
    snap = coordination.get("worktree_snapshot") if isinstance(coordination, dict) else None
    if not isinstance(snap, dict):
        return ""
    files = [str(f.get("path", "")) for f in snap.get("files_changed") or [] if isinstance(f, dict)]
    lines = [
        f"The {previous} finished with status {coordination.get('status', '?')}; its working-tree "
        f"snapshot ({snap.get('snapshot_time', '?')}, "
        f"base {str(snap.get('base_commit', ''))[:12]}, "
        f"scope hash {str(snap.get('scope_hash', ''))[:16]}) changed {len(files)} files:",
        str(snap.get("diff_stat", "")).strip(),
    ]
    findings = coordination.get("blocking_findings") or []
    if findings:
        lines.append("Blocking findings: " + "; ".join(str(f) for f in findings))
    return "\n".join(x for x in lines if x)


def _read_text(base: str, *parts: str) -> str:
    # Folder by folder without following a symlink: a link anywhere under the state directory
    # could hand a subagent (and so the model) a file from outside it (I10).
    try:
        return read_under(base, *parts).decode("utf-8", "replace")
    except OSError:
        return ""
