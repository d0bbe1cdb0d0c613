"""What a subagent's prompt names: its `AgentId:`, and a cached task and role (`Task:`, `Role:`).

The task convention: a line `Task: TASK-0824` and a line `Role: reviewer` anywhere in the
prompt (case-insensitive keys). The id and role rules are the task store's, so a name that
passes here is a safe directory or file name part.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from indexer import extract_agent_id

__all__ = ["Names", "names_in"]

_TASK = re.compile(r"^[ \t]*task[ \t]*:[ \t]*([A-Za-z0-9][A-Za-z0-9._-]{0,63})[ \t]*$", re.I | re.M)
_ROLE = re.compile(r"^[ \t]*role[ \t]*:[ \t]*([a-z][a-z0-9_-]{0,31})[ \t]*$", re.I | re.M)


@dataclass(frozen=True, slots=True)
class Names:
    agent_id: str | None = None  # the prompt's `AgentId:` (lower case), if any
    task_id: str | None = None
    role: str | None = None

    @property
    def is_empty(self) -> bool:
        return self.agent_id is None and (self.task_id is None or self.role is None)


def names_in(prompt: str) -> Names:
    """The names in a subagent's prompt (pure)."""
    task = _TASK.search(prompt)
    role = _ROLE.search(prompt)
    return Names(
        extract_agent_id(prompt),
        task.group(1) if task else None,
        role.group(1).lower() if role else None,
    )
