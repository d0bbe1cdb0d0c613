"""A session's entries folded into lanes of timeline items, with failures and their fixes (pure).

One item per thing a reader cares about: a prompt, a tool call (its use and its result merged),
an agent launched, started or stopped, a compaction, the assistant's last message. The main
conversation is lane `main`; each subagent is a lane of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from indexer import AgentRow, Entry, StoredEntry

__all__ = ["Fix", "Item", "Lane", "Timeline", "build_timeline"]

_CALL_EVENTS = {"tool_use", "agent_start"}
_RESULT_EVENTS = {
    "tool_result": "ok",
    "tool_failure": "failed",
    "agent_complete": "ok",
    "agent_launched": "ok",  # a background agent: launching it is the call's whole result
    "agent_failed": "failed",
    "permission_denied": "failed",
}
_CHANGES_FILES = {"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch"}  # apply_patch: Codex
_SHOWN = {
    "prompt": "prompt",
    "subagent_prompt": "prompt",  # a Codex subagent's task, in its lane
    "subagent_start": "agent",
    "subagent_stop": "agent",
    "stop": "reply",
    "pre_compact": "compaction",
    "post_compact": "compaction",
    "compact_summary": "compaction",
    "session_start": "session",
    "session_end": "session",
    "decision": "note",
    "constraint": "note",
    "failure": "note",
    "note": "note",
    "task_created": "task",
    "task_completed": "task",
    "stop_failure": "failure",
}


@dataclass(frozen=True, slots=True)
class Fix:
    """What made a failed call pass: the passing call and the file changes in between."""

    entry_id: int  # the passing call, 0 when nothing passed later in the session
    changes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Item:
    """One row of the timeline."""

    entry_id: int
    ts_ns: int
    lane: str
    kind: str  # call | prompt | agent | reply | compaction | session | note | task | failure
    title: str
    body: str = ""
    files: tuple[str, ...] = ()
    status: str = ""  # ok | failed | running, for calls
    tool: str = ""
    command: str = ""
    error: str = ""
    fix: Fix | None = None
    launches: str = ""  # the lane an Agent call started


@dataclass(slots=True)
class Lane:
    """The main conversation or one subagent."""

    lane_id: str
    agent_type: str = ""
    description: str = ""
    status: str = ""
    instruction: str = ""
    outcome: str = ""
    first_entry: int = 0
    last_entry: int = 0


@dataclass(slots=True)
class Timeline:
    """Everything the page draws on its timeline, in entry order."""

    lanes: list[Lane] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)

    def failures(self) -> list[Item]:
        return [i for i in self.items if i.status == "failed" or i.kind == "failure"]

    def compactions(self) -> list[Item]:
        return [i for i in self.items if i.kind == "compaction"]


def build_timeline(entries: Sequence[StoredEntry], agents: Iterable[AgentRow]) -> Timeline:
    """Fold a session's entries (oldest first) into lanes and items."""
    lanes: dict[str, Lane] = {"main": Lane("main", description="main conversation")}
    for a in agents:
        lanes[a.agent_id] = Lane(a.agent_id, a.agent_type, a.description, a.status)
    items: list[Item] = []
    open_calls: dict[str, int] = {}  # tool_use_id -> index in items
    for stored in entries:
        e = stored.entry
        lane = _lane_of(e, lanes)
        lane.first_entry = lane.first_entry or stored.id
        lane.last_entry = stored.id
        if e.event in _CALL_EVENTS:
            call = _call_item(stored.id, e)
            if e.event == "agent_start":
                # The Agent call is made by the conversation that launches it.
                call = replace(call, lane="main", launches=e.agent_id)
                lane.instruction = lane.instruction or e.instruction
            if e.tool_use_id:
                open_calls[e.tool_use_id] = len(items)
            items.append(call)
        elif e.event in _RESULT_EVENTS:
            at = open_calls.pop(e.tool_use_id, -1) if e.tool_use_id else -1
            if e.event == "agent_complete":
                lane.outcome = e.output_summary or lane.outcome
            if at >= 0:
                items[at] = _with_result(items[at], e)
            else:
                items.append(_with_result(_call_item(stored.id, e), e))
        elif e.event in _SHOWN:
            if e.event == "subagent_stop" and e.output_summary:
                lane.outcome = e.output_summary
            items.append(
                Item(
                    stored.id,
                    e.ts_ns,
                    lane.lane_id,
                    _SHOWN[e.event],
                    e.description or e.event,
                    body=e.text or e.output_summary,
                    files=e.files,
                )
            )
    ordered = [lanes["main"]] + [lane for k, lane in lanes.items() if k != "main"]
    return Timeline(ordered, _with_fixes(items))


def _lane_of(e: Entry, lanes: dict[str, Lane]) -> Lane:
    lane_id = e.agent_id or "main"
    if lane_id not in lanes:
        lanes[lane_id] = Lane(lane_id, e.agent_type)
    return lanes[lane_id]


def _input_of(e: Entry) -> dict[str, Any]:
    try:
        detail = json.loads(bytes(e.detail) or b"{}")
    except ValueError:
        return {}
    value = detail.get("input") if isinstance(detail, dict) else None
    return value if isinstance(value, dict) else {}


def _call_item(entry_id: int, e: Entry) -> Item:
    command = _input_of(e).get("command")
    return Item(
        entry_id,
        e.ts_ns,
        e.agent_id or "main",
        "call",
        e.description or e.tool_name or e.event,
        body=e.instruction,
        files=e.files,
        status="running",
        tool=e.tool_name,
        command=command if isinstance(command, str) else "",
    )


def _with_result(call: Item, e: Entry) -> Item:
    status = _RESULT_EVENTS[e.event]
    return replace(
        call,
        status=status,
        error=e.error if status == "failed" else call.error,
        body=call.body or e.output_summary,
        files=call.files or e.files,
    )


def _with_fixes(items: list[Item]) -> list[Item]:
    """Attach to each failed call the later passing call of the same command in its lane."""
    out = list(items)
    for n, item in enumerate(items):
        if item.status != "failed":
            continue
        key = (item.lane, item.tool, item.command or item.title)
        changes: list[str] = []
        fix = Fix(0)
        for later in items[n + 1 :]:
            if later.lane != item.lane or later.kind != "call":
                continue
            if (later.lane, later.tool, later.command or later.title) == key:
                if later.status == "failed":
                    changes = []  # only what changed after the last failure made it pass
                    continue
                if later.status == "ok":
                    fix = Fix(later.entry_id, tuple(dict.fromkeys(changes)))
                    break
            elif later.tool in _CHANGES_FILES and later.status == "ok":
                changes += [f"{later.tool} {f}" for f in later.files] or [later.title]
        out[n] = replace(item, fix=fix)
    return out
