"""Pure, deterministic extraction of memory observations (decisions, failures, …) from entries."""

from __future__ import annotations

import json
import re
from typing import Any

from indexer import AGENT_TOOLS, EDIT_TOOLS, Entry
from summarizer.common.acks import is_acknowledgement
from summarizer.common.failures import cascade_kind, describe_failure, target_of
from summarizer.common.neutralize import addresses_model, neutralize
from summarizer.common.text import (
    ITEM_CHARS,
    LIFT_RE,
    NEGATIVE_RE,
    clean,
    clip,
    command_of,
    error_summary,
    key_terms,
    mask,
    relpath,
    rule_head,
    rule_object,
    signature,
    text_key,
)
from summarizer.memory import statements
from summarizer.memory.explicit import observe_explicit
from summarizer.memory.observations import (
    ConstraintObs,
    DecisionObs,
    EditObs,
    FailureObs,
    FeatureObs,
    GiveUpObs,
    NeutralizedObs,
    Observation,
    RevokeObs,
    SessionTextObs,
    SuccessObs,
    TodoObs,
    Where,
)
from summarizer.memory.prose import Unit, plan_parts, units
from summarizer.memory.supersede import chosen_and_rejected, is_reversal

__all__ = [
    "EDIT_TOOLS",
    "ConstraintObs",
    "DecisionObs",
    "EditObs",
    "FailureObs",
    "FeatureObs",
    "GiveUpObs",
    "NeutralizedObs",
    "Observation",
    "RevokeObs",
    "SessionTextObs",
    "SuccessObs",
    "TodoObs",
    "Where",
    "detail_of",
    "observe",
    "revokes",
]

# A templated prompt that differs only after its first words restates the same rule.
RULE_KEY_WORDS = 12
_LABEL = re.compile(r"(?i)^(?:\w+\s+)?(?:decision|decided|decisi[oó]n)\s*:\s*")


def revokes(revocation: RevokeObs, text: str, negative: bool, head: tuple[str, ...]) -> bool:
    """Whether a later sentence lifts an active rule (the documented, simple contradiction test).

    A lifting phrase ("you can", "feel free to", "no longer", …) revokes a rule when the
    sentence mentions everything the rule is about (its paths, else its first two key terms).
    A rule of opposite polarity revokes it when both rules have the same head ("never use X"
    vs "always use X").
    """
    if revocation.is_rule:
        return bool(head) and revocation.negative != negative and revocation.head == head
    target = rule_object(text, head)
    return bool(target) and target <= revocation.terms


def _failure(e: Entry, at: Where, tool_input: dict[str, Any]) -> list[Observation]:
    tool = e.tool_name or "tool"
    command = command_of(tool, tool_input, e.cwd, e.description)
    code, printed = error_summary(e.error or "error")
    # What the call printed is data: a passage of it that addresses the model is left out.
    line, left_out = neutralize(printed)
    error_class = (f"exit {code}: " if code else "") + mask(line)
    source = "agent_output" if tool in AGENT_TOOLS else "tool"
    description, more = neutralize(describe_failure(tool, clip(command, 120), code, line))
    failure = FailureObs(
        signature=signature(tool, command, error_class),
        cmd_key=f"{tool}\x1f{command}",
        tool=tool,
        command=clip(command, 300),
        error_class=error_class,
        error_line=line,
        description=clip(description, ITEM_CHARS),
        source=source,
        feature_id="",
        prevention="",
        resolved=False,
        at=at,
        target_key=target_of(tool, tool_input, e.cwd, command),
        cascade=cascade_kind(e.error or ""),
    )
    return [NeutralizedObs(left_out + more, at), failure] if left_out + more else [failure]


# --- per-entry dispatch ---------------------------------------------------------------------


def detail_of(e: Entry) -> dict[str, Any]:
    """The entry's raw detail JSON as a dict ({} when absent or not an object)."""
    raw = bytes(e.detail)
    if not raw or raw[:1] != b"{":
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _input(detail: dict[str, Any]) -> dict[str, Any]:
    value = detail.get("input")
    return value if isinstance(value, dict) else {}


def observe(entry_id: int, e: Entry) -> list[Observation]:
    """Every observation one entry contributes to the memory, in a fixed order."""
    at = Where(entry_id, e.ts_ns, e.session_id, e.agent_id)
    kind = e.event
    if kind in ("tool_failure", "agent_failed"):
        return _failure(e, at, _input(detail_of(e)))
    if kind == "tool_result":
        return _tool_result(e, at)
    if kind in ("tool_use",) and e.tool_name == "TodoWrite":
        return _todos(e, at, detail_of(e))
    if kind == "agent_complete":
        # A subagent's answer is recorded data, never the session's decisions.
        tool_input = _input(detail_of(e))
        command = command_of(e.tool_name or "Agent", tool_input, e.cwd, e.description)
        target = target_of(e.tool_name or "Agent", tool_input, e.cwd, command)
        return [SuccessObs(f"{e.tool_name}\x1f{command}", "the agent completed", at, target)]
    if kind == "stop":  # the session's own last message of a turn
        out = _decisions(units(e.text), "agent", "stop", at)
        if e.agent_id == "main" and e.text.strip():
            out += _recorded_text("report", e.text, 1500, at)
        return out
    if kind == "post_compact":  # Claude Code's summary restates; it states no new choice
        return _recorded_text("compact", e.text, 3000, at) if e.text else []
    if kind == "prompt":
        return _prompt(e, at)
    if kind in ("task_created", "task_completed"):
        detail = detail_of(e)
        task_id = str(detail.get("task_id", ""))
        status = "completed" if kind == "task_completed" else "pending"
        op = "create" if kind == "task_created" else "update"
        return [TodoObs(op, ((task_id, clean(e.description)[:200], status),), at)]
    if e.hook_event == "CtxdEmit":
        return observe_explicit(e, at, detail_of(e))
    return []


def _tool_result(e: Entry, at: Where) -> list[Observation]:
    detail = detail_of(e)
    tool_input = _input(detail)
    if e.error:  # an interrupted call arrives as a result with error "interrupted"
        return _failure(e, at, tool_input)
    tool = e.tool_name or "tool"
    command = command_of(tool, tool_input, e.cwd, e.description)
    verb = "the command passed" if tool == "Bash" else "the call succeeded"
    target = target_of(tool, tool_input, e.cwd, command)
    shown = clip(command, 120) if tool == "Bash" else ""
    out: list[Observation] = [SuccessObs(f"{tool}\x1f{command}", verb, at, target, shown)]
    if tool in EDIT_TOOLS:
        path = tool_input.get("file_path") or tool_input.get("notebook_path")
        # Codex's apply_patch names its files in the patch: the entry lists them.
        paths = [path] if isinstance(path, str) and path else list(e.files)
        out += [EditObs(relpath(clean(p), e.cwd), at) for p in paths]
    elif tool == "TodoWrite":
        out += _todos(e, at, detail)
    elif tool in ("TaskCreate", "TaskUpdate"):
        out += _tasks(tool, at, tool_input, detail.get("response"))
    return out


def _todos(e: Entry, at: Where, detail: dict[str, Any]) -> list[Observation]:
    todos = _input(detail).get("todos")
    if not isinstance(todos, list):
        return []
    items = []
    for i, t in enumerate(todos[:50]):
        if isinstance(t, dict):
            tid = str(t.get("id", "") or i + 1)
            items.append(
                (tid, clip(clean(str(t.get("content", ""))), 200), str(t.get("status", "")))
            )
    return [TodoObs("replace", tuple(items), at)]


def _tasks(tool: str, at: Where, tool_input: dict[str, Any], response: Any) -> list[Observation]:
    if tool == "TaskCreate":
        task = response.get("task") if isinstance(response, dict) else None
        task_id = str(task.get("id", "")) if isinstance(task, dict) else ""
        subject = clip(clean(str(tool_input.get("subject", ""))), 200)
        return [TodoObs("create", ((task_id, subject, "pending"),), at)]
    task_id = str(tool_input.get("taskId", ""))
    subject = clip(clean(str(tool_input.get("subject", "") or "")), 200)
    status = str(tool_input.get("status", "") or "")
    return [TodoObs("update", ((task_id, subject, status),), at)] if task_id else []


def _recorded_text(field: str, text: str, limit: int, at: Where) -> list[Observation]:
    """A session text kept as recorded, without the passages that address the model."""
    kept, left_out = neutralize(text)
    out: list[Observation] = [SessionTextObs(field, clip(clean(kept), limit), at)]
    return out + ([NeutralizedObs(left_out, at)] if left_out else [])


def _decisions(
    sentences: list[Unit], speaker: str, source: str, at: Where
) -> list[Observation]:
    out: list[Observation] = []
    seen = set()
    left_out = 0
    for text in statements.decisions_in(sentences, speaker):
        if addresses_model(text):  # never a decision of the session's, whoever wrote it
            left_out += 1
            continue
        key = text_key(text)
        if key not in seen:
            seen.add(key)
            shown = _LABEL.sub("", text)
            shown = shown[:1].upper() + shown[1:]
            out.append(DecisionObs(key, clip(shown, ITEM_CHARS), source, "", at))
    return out + ([NeutralizedObs(left_out, at)] if left_out else [])


def _prompt(e: Entry, at: Where) -> list[Observation]:
    text = e.text
    if not text.strip():
        return []
    if is_acknowledgement(text):  # noted after the request, never the request itself
        return [SessionTextObs("ack", clip(clean(text), 60), at)]
    out: list[Observation] = [SessionTextObs("prompt", clip(clean(text), 600), at)]
    if e.agent_id != "main":  # a subagent's instructions are not the user's words
        return out
    parts = plan_parts(text)
    if parts is not None:  # the agent's approved plan: its choices, never the user's rules
        out += _decisions(units(parts[0]), "plan", "plan", at)
    own = statements.user_sentences(text)
    out += _decisions(own, "user", "user_prompt", at)
    for unit in own:
        s = unit.text
        if "?" in s or statements.is_complaint(s):
            continue
        if LIFT_RE.search(s):
            terms = frozenset(key_terms(s))
            out.append(RevokeObs("", terms, bool(NEGATIVE_RE.search(s)), (), False, at))
        if is_reversal(s):  # "use spaces instead of tabs": earlier tab rules and choices retire
            out.append(GiveUpObs(chosen_and_rejected(s)[1], at))
    for rule in statements.rules_in(own):
        if LIFT_RE.search(rule):
            continue  # "you can edit X now" lifts a rule; it states none
        negative = statements.is_negative(rule)
        head = rule_head(rule)
        out.append(RevokeObs("", frozenset(), negative, head, True, at))
        key = text_key(" ".join(rule.split()[:RULE_KEY_WORDS]))
        shown = clip(rule, ITEM_CHARS)
        out.append(ConstraintObs(key, shown, "user_prompt", "", negative, head, at))
    return out
