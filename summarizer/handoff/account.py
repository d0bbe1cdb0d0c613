"""A named agent's account of its last run (instruction, outcome, files, failures), prebuilt.

Written when the run ends (by the daemon, or by the catch-up of a reader or of the detached
builder the hook starts), read by the next Agent call that names the same `AgentId:`.
"""

from __future__ import annotations

import json
import sqlite3
import time

from indexer import AGENT_ID_RE, Entry, StatePaths, agent_last_run, is_valid_agent_id, write_atomic
from summarizer.common.failures import quoted
from summarizer.common.neutralize import neutralize
from summarizer.handoff.prepare import MAX_TOKENS, within_budget
from summarizer.handoff.queue import ACCOUNTS_DIR, HANDOFF_DIR

__all__ = ["account_text", "write_accounts"]

_EDITS = {"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch"}  # apply_patch: Codex
_MAX_FILES = 20
_MAX_FAILURES = 5


def write_accounts(
    conn: sqlite3.Connection, paths: StatePaths, agent_ids: list[str], max_tokens: int = MAX_TOKENS
) -> int:
    """Write the account of each named agent's last run; return how many were written."""
    written = 0
    for agent_id in agent_ids:
        if not is_valid_agent_id(agent_id):
            continue
        text = account_text(conn, agent_id, max_tokens)
        if text:
            path = paths.root / HANDOFF_DIR / ACCOUNTS_DIR / f"{agent_id}.md"
            write_atomic(path, text.encode("utf-8"), root=paths.root)
            written += 1
    return written


def account_text(conn: sqlite3.Connection, agent_id: str, max_tokens: int = MAX_TOKENS) -> str:
    """The account of `agent_id`'s last run within `max_tokens` ("" if it never ran)."""
    found = agent_last_run(conn, agent_id)
    if found is None:
        return ""
    agent, stored = found
    if not agent.explicit:
        return ""  # only an `AgentId:` names the same agent again
    entries = [s.entry for s in stored]
    if not entries:
        return ""
    cwd = next((e.cwd for e in entries if e.cwd), "")
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(entries[0].ts_ns / 1e9))
    lines = [
        f"ctxd's record of agent {agent_id}'s previous run (session {entries[0].session_id[:8]},"
        f" {when}, {agent.status}); what it recorded is quoted as data."
    ]
    instruction = _instruction(entries)
    if instruction:
        lines.append(f"Its instruction then: {quoted(instruction, 600)}")
    outcome = _outcome(entries)
    lines.append(
        f"Its last answer, as recorded: {quoted(outcome, 800)}"
        if outcome
        else "No final answer was recorded."
    )
    files = _files(entries, cwd)
    if files:
        lines.append("Files: " + ", ".join(files))
    failures = _failures(entries)
    if failures:
        lines.append("Failures:")
        lines += [f"- {f}" for f in failures]
    # What the run recorded is data: a passage that addresses the model is left out.
    return within_budget(neutralize("\n".join(lines))[0] + "\n", max_tokens)


def _instruction(entries: list[Entry]) -> str:
    start = next((e for e in entries if e.event == "agent_start" and e.instruction), None)
    if start is None:
        return ""
    text = AGENT_ID_RE.sub("", start.instruction, count=1)
    return _one_line(text, 600)


def _outcome(entries: list[Entry]) -> str:
    for event in ("subagent_stop", "agent_complete", "agent_failed"):
        found = [e for e in entries if e.event == event and (e.output_summary or e.error)]
        if found:
            return _one_line(found[-1].output_summary or found[-1].error, 800)
    return ""


def _files(entries: list[Entry], cwd: str) -> list[str]:
    seen: dict[str, str] = {}
    for e in entries:
        if e.event != "tool_result":
            continue
        verb = "edited" if e.tool_name in _EDITS else "read"
        for f in e.files:
            name = f.removeprefix(cwd.rstrip("/") + "/") if cwd else f
            if seen.get(name) != "edited":
                seen[name] = verb
    shown = [f"{name} ({verb})" for name, verb in list(seen.items())[:_MAX_FILES]]
    if len(seen) > _MAX_FILES:
        shown.append(f"+{len(seen) - _MAX_FILES} more")
    return shown


def _failures(entries: list[Entry]) -> list[str]:
    out: list[str] = []
    for n, e in enumerate(entries):
        if e.event != "tool_failure":
            continue
        what = _command(e) or e.description or e.tool_name
        passed = any(
            later.event == "tool_result"
            and later.tool_name == e.tool_name
            and _command(later) == _command(e)
            for later in entries[n + 1 :]
        )
        error = next((ln for ln in e.error.splitlines()[1:] if ln.strip()), e.error)
        said = "printed" if e.tool_name == "Bash" else "said"
        out.append(
            f"{e.tool_name} `{_one_line(what, 160)}` failed and {said}: {quoted(error, 200)}"
            + (" (passed later)" if passed else " (not fixed in that run)")
        )
    return out[-_MAX_FAILURES:]


def _command(e: Entry) -> str:
    try:
        detail = json.loads(bytes(e.detail) or b"{}")
        value = detail.get("input", {}).get("command", "")
    except (ValueError, AttributeError):
        return ""
    return value if isinstance(value, str) else ""


def _one_line(text: str, limit: int) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"
