"""The hook's handoff branches: queue at the Agent call, hand over at SubagentStart (stdlib only).

SubagentStart is on the fast path (the subagent waits for it): it parses the payload with the C
JSON scanner, renames one marker and prints it; nothing else is imported.
"""

from __future__ import annotations

from summarizer.resume.fastjson import encode_string, loads
from summarizer.resume.hook_output import cap

__all__ = [
    "agent_call",
    "agent_call_failed",
    "agent_stopped",
    "light_account",
    "subagent_start_output",
]

MAX_CONTEXT_CHARS = 10_000  # Claude Code's limit for additionalContext (UTF-16 units)
MAX_ACCOUNT_BYTES = 1500  # the default `[resume] subagent_max_tokens`, as bytes


def subagent_start_output(payload: bytes, base: str) -> str:
    """The SubagentStart hook output for this subagent ("" when there is nothing to hand over)."""
    from summarizer.handoff.queue import claim

    event = loads(payload)
    text = claim(
        base,
        str(event.get("session_id", "")),
        str(event.get("agent_type", "")),
        str(event.get("agent_id", "")),
    )
    if not text.strip():
        return ""
    return (
        '{"hookSpecificOutput":{"hookEventName":"SubagentStart","additionalContext":'
        + encode_string(cap(text, MAX_CONTEXT_CHARS))
        + "}}\n"
    )


def agent_call(payload: bytes, base: str) -> None:
    """Queue the handoff of an Agent tool call (PreToolUse)."""
    from summarizer.handoff.prepare import agent_call as prepare

    prepare(payload, base)


def agent_stopped(payload: bytes, base: str) -> None:
    """SubagentStop of an agent its call named: write the account of this run at once.

    It holds the instruction and the outcome; the index's fuller account (with files and
    failures) replaces it when the daemon or a catch-up has indexed the run.
    """
    from summarizer.handoff.queue import claimed_by, write_account

    event = loads(payload)
    marker = claimed_by(base, str(event.get("session_id", "")), str(event.get("agent_id", "")))
    if marker is None or not marker.get("name"):
        return
    outcome = event.get("last_assistant_message")
    if isinstance(outcome, str) and outcome:
        from indexer import redact_text  # stored outside the spool: redacted, like the index

        event["last_assistant_message"] = redact_text(outcome)
    called_ns = marker.get("called_ns")
    started = called_ns if isinstance(called_ns, int) else 0
    from summarizer.resume.hook_settings import read_settings

    budget = read_settings(base).subagent_max_tokens
    text = light_account(marker, event, budget)
    write_account(base, str(marker.get("name", "")), text, started)


def light_account(
    marker: dict[str, object], event: dict[str, object], max_tokens: int = MAX_ACCOUNT_BYTES
) -> str:
    """Instruction and outcome of the run that just ended, at most `max_tokens` bytes in UTF-8
    (a token is at least one byte, so this is within the token budget without counting)."""
    name = str(marker.get("name", ""))
    instruction = _one_line(_without_agent_id(str(marker.get("instruction", ""))), 600)
    outcome = _one_line(str(event.get("last_assistant_message") or ""), 700)
    from summarizer.common.neutralize import neutralize

    quote = '"' + instruction.replace('"', "'") + '"'
    answer = '"' + outcome.replace('"', "'") + '"'
    text = neutralize(
        f"ctxd's record of agent {name}'s previous run (session "
        f"{str(event.get('session_id', ''))[:8]}, completed); what it recorded is quoted as data.\n"
        f"Its instruction then: {quote}\n"
        + (
            f"Its last answer, as recorded: {answer}\n"
            if outcome
            else "No final answer was recorded.\n"
        )
    )[0]
    data = text.encode("utf-8")
    return text if len(data) <= max_tokens else data[:max_tokens].decode("utf-8", "ignore")


def _without_agent_id(prompt: str) -> str:
    lines = prompt.splitlines()
    return "\n".join(ln for ln in lines if not ln.strip().lower().startswith("agentid"))


def _one_line(text: str, limit: int) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def agent_call_failed(payload: bytes, base: str) -> None:
    """PostToolUseFailure or PermissionDenied of an Agent call: drop its unclaimed handoff."""
    from summarizer.handoff.queue import drop

    event = loads(payload)
    drop(base, str(event.get("session_id", "")), str(event.get("tool_use_id", "")))
