"""Claude Code 1.0.x subagent lines inline in the main transcript, tied to their Task call (pure).

Before subagents had transcripts of their own (`subagents/agent-<id>.jsonl`, 2.x), Claude Code
wrote a subagent's lines into the main transcript with `"isSidechain": true` and no `agentId`.
Each subagent's lines form a chain: the first is a user line with no `parentUuid` whose text is
the Task call's `prompt`, and every later line names the line before it in `parentUuid`. Parallel
subagents are written block by block as they finish, so a block follows a later Task call than
its own: the prompt, not the position, says which call started it.

A chain is named by its Task call's tool_use_id. The import puts that id where a 2.x line has
the subagent's Claude Code id, and attribution links it to the agent the Task call started.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

__all__ = ["ORPHAN_PREFIX", "Sidechains", "TaskCall"]

# A chain whose start was not seen (its Task call not in this file, or read before a resumed
# import's start) is named after its first line seen: one unknown subagent, not one per line.
ORPHAN_PREFIX = "sidechain-"
# Task calls remembered while no chain has claimed them: a session has far fewer.
_MAX_OPEN_TASKS = 1000


class TaskCall(msgspec.Struct, frozen=True, gc=False):
    """The fields of a Task/Agent call's input that tie a chain to it."""

    prompt: str = ""
    subagent_type: str = ""


_TASK = msgspec.json.Decoder(TaskCall)


@dataclass
class Sidechains:
    """The chains of one transcript file, fed its lines in order."""

    open_tasks: dict[str, TaskCall] = field(default_factory=dict)  # call order
    chains: dict[str, tuple[str, str]] = field(default_factory=dict)  # uuid -> (id, type)

    def task_called(self, tool_use_id: str, tool_input: msgspec.Raw) -> None:
        """A Task/Agent call of the main thread: a chain may start with its prompt."""
        try:
            call = _TASK.decode(bytes(tool_input)) if tool_input else TaskCall()
        except (msgspec.DecodeError, ValueError):
            call = TaskCall()
        self.open_tasks[tool_use_id] = call
        if len(self.open_tasks) > _MAX_OPEN_TASKS:
            del self.open_tasks[next(iter(self.open_tasks))]

    def agent_of(self, uuid: str, parent: str | None, prompt: str | None) -> tuple[str, str]:
        """(the chain's id, its subagent type) for a sidechain line; `prompt` is the text of a
        user line whose content is text (a chain's first line is one)."""
        chain = self.chains.get(parent) if parent else None
        if chain is None:
            chain = self._start(uuid, prompt) if not parent and prompt is not None else None
        if chain is None:
            chain = (ORPHAN_PREFIX + (uuid or "unknown"), "")
        if uuid:
            self.chains[uuid] = chain
        return chain

    def _start(self, uuid: str, prompt: str) -> tuple[str, str] | None:
        """The Task call a chain's first line answers: the one with this prompt, else (the
        prompt altered on the way) the oldest call no chain has claimed yet."""
        if not self.open_tasks:
            return None
        wanted = " ".join(prompt.split())
        found = next(
            (tid for tid, c in self.open_tasks.items() if c.prompt == prompt), None
        ) or next(
            (tid for tid, c in self.open_tasks.items() if " ".join(c.prompt.split()) == wanted),
            None,
        )
        tool_use_id = found or next(iter(self.open_tasks))
        call = self.open_tasks.pop(tool_use_id)
        return tool_use_id, call.subagent_type or "general-purpose"
