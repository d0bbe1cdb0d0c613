"""Memory for a new session: open tasks, unresolved failures and constraints, ≤ 400 tokens."""

from __future__ import annotations

from collections.abc import Callable

from indexer import write_atomic
from indexer.paths import StatePaths
from summarizer.common.plain import clean_line
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
    the active constraints. Lines are added in that order while they fit `max_tokens`.
    """
    sections = [
        (
            "Open tasks:",
            [f"- [{t.status.replace('_', ' ')}] {t.content}" for t in state.open_todos],
        ),
        ("Failures not yet resolved:", [f"- {x}" for x in note_lines(state.open_failures)[0]]),
        ("Constraints in force:", [f"- {c}" for c in state.constraints]),
    ]
    if not any(items for _, items in sections):
        return ""
    title = f'"{state.title}"' if state.title else "(untitled)"
    text = (
        f"ctxd project memory: left open by session {title} ({state.session_id[:8]}), "
        f"recorded {state.created_at[:16].replace('T', ' ')} UTC."
    )
    if count(text) > max_tokens:
        return ""
    for head, items in sections:
        added = False
        for item in items:
            line = clean_line(item, 300)
            candidate = text + ("" if added else f"\n\n{head}") + "\n" + line
            if count(candidate) > max_tokens:
                break
            text, added = candidate, True
    return text + "\n"


def write_startup(paths: StatePaths, text: str) -> None:
    """Write `context/startup.md` atomically (empty when nothing is open)."""
    write_atomic(paths.context / STARTUP_FILE, text.encode(), root=paths.root)
