"""Memory for a new session: open tasks, unresolved failures and constraints, ≤ 400 tokens."""

from __future__ import annotations

from collections.abc import Callable

from indexer import write_atomic
from indexer.paths import StatePaths
from summarizer.common.neutralize import neutralize
from summarizer.common.plain import clean_line
from summarizer.memory.inject_cache import more_constraints_line
from summarizer.resume.failure_notes import note_lines
from summarizer.resume.files import STARTUP_FILE
from summarizer.resume.state import ResumeState

__all__ = ["STARTUP_MAX_TOKENS", "render_startup", "write_startup"]

STARTUP_MAX_TOKENS = 400


def render_startup(
    state: ResumeState, count: Callable[[str], int], max_tokens: int = STARTUP_MAX_TOKENS
) -> str:
    """What a new session of this project should know, or "" when nothing is open (pure).

    Only what is still in force: the last session's open tasks, its unresolved failures and
    the active constraints. Lines are added in that order while they fit `max_tokens`; a
    constraint that does not fit is counted in a last line, never dropped silently.
    """
    # Whatever the record holds is data: a passage that addresses the model is left out.
    tasks = [safe(f"- [{t.status.replace('_', ' ')}] {t.content}") for t in state.open_todos]
    failures = [safe(f"- {x}") for x in note_lines(state.open_failures)[0]]
    rules = [f"- {c}" for c in state.constraints]  # the user's own words, as written
    in_force = max(state.constraints_in_force, len(state.constraints))
    if not (tasks or failures or rules or in_force):
        return ""
    title = f'"{state.title}"' if state.title else "(untitled)"
    head = (
        f"ctxd project memory: left open by session {title} ({state.session_id[:8]}), "
        f"recorded {state.created_at[:16].replace('T', ' ')} UTC."
    )
    if count(head) > max_tokens:
        return ""
    blocks: list[tuple[str, list[str]]] = []

    def render(extra: list[str] | None = None) -> str:
        parts = [head]
        for name, lines in blocks:
            shown = lines + (extra or []) if name == "Constraints in force:" else lines
            if shown:
                parts.append(f"\n{name}\n" + "\n".join(shown))
        return "\n".join(parts)

    for name, items in (("Open tasks:", tasks), ("Failures not yet resolved:", failures),
                        ("Constraints in force:", rules)):  # fmt: skip
        kept: list[str] = []
        blocks.append((name, kept))
        for item in items:
            kept.append(clean_line(item, 300))
            if count(render()) > max_tokens:
                kept.pop()
                break
    shown = blocks[-1][1]
    while len(shown) < in_force:
        line = more_constraints_line(in_force - len(shown))
        if count(render([line])) <= max_tokens:
            return render([line]) + "\n"
        if not shown:
            break  # no room even for that line: the memory is full of open work
        shown.pop()
    return render() + "\n"


def safe(line: str) -> str:
    """A line without the passages that address the model."""
    return neutralize(line)[0]


def write_startup(paths: StatePaths, text: str) -> None:
    """Write `context/startup.md` atomically (empty when nothing is open)."""
    write_atomic(paths.context / STARTUP_FILE, text.encode(), root=paths.root)
