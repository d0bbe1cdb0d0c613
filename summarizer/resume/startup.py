"""Memory for a new session: open tasks, unresolved failures and constraints, ≤ 400 tokens."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from indexer import write_atomic
from indexer.paths import StatePaths
from summarizer.common.plain import clean_line
from summarizer.resume.files import STARTUP_FILE
from summarizer.resume.state import CLIENT_NAMES, ResumeState

__all__ = ["STARTUP_MAX_TOKENS", "render_startup", "write_startup"]

STARTUP_MAX_TOKENS = 400


def render_startup(
    state: ResumeState,
    count: Callable[[str], int],
    max_tokens: int = STARTUP_MAX_TOKENS,
    hosts: Mapping[str, str] | None = None,
) -> str:
    """What a new session of this project should know, or "" when nothing is open (pure).

    Only what is still in force: the last session's open tasks, the project's unresolved
    failures, its decisions and the active constraints. Lines are added in that order while
    they fit `max_tokens`. `hosts` maps sessions to the client they ran in: when they are
    not all the last session's, each failure and decision says which client it came from.
    """
    known = hosts or {}
    mixed = any(host != state.host for host in known.values())

    def where(session_id: str) -> str:
        host = known.get(session_id, state.host)
        return f" (in a {CLIENT_NAMES.get(host, host)} session)" if mixed else ""

    made = dict(zip(state.decisions, state.decision_sessions, strict=False))
    sections = [
        (
            "Open tasks:",
            [f"- [{t.status.replace('_', ' ')}] {t.content}" for t in state.open_todos],
        ),
        (
            "Failures not yet resolved:",
            [
                f"- {f.tool + ': ' if f.tool else ''}{f.description}{where(f.session_id)}"
                for f in state.open_failures
            ],
        ),
        ("Decisions taken:", [f"- {d}{where(made.get(d, ''))}" for d in state.decisions]),
        ("Constraints in force:", [f"- {c}" for c in state.constraints]),
    ]
    if not any(items for head, items in sections if head != "Decisions taken:"):
        return ""  # decisions alone leave nothing open
    title = f'"{state.title}"' if state.title else "(untitled)"
    client = CLIENT_NAMES.get(state.host, state.host)
    text = (
        f"ctxd project memory: left open by session {title} ({state.session_id[:8]}, "
        f"{client}), recorded {state.created_at[:16].replace('T', ' ')} UTC."
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
