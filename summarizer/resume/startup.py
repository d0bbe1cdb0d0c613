"""Memory for a new session: open tasks, unresolved failures and constraints, ≤ 400 tokens."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from indexer import write_atomic
from indexer.paths import StatePaths
from summarizer.common.neutralize import neutralize
from summarizer.common.plain import clean_line
from summarizer.memory.inject_cache import more_constraints_line
from summarizer.resume.failure_notes import open_lines
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
    failures (the last session's, then the others'), its decisions and the active constraints.
    Lines are added in that order while they fit `max_tokens`; a constraint that does not fit
    is counted in a last line, never dropped silently. `hosts` maps sessions to the client
    they ran in: when they are not all the last session's, each failure and decision says
    which client it came from.
    """
    known = hosts or {}
    mixed = any(host != state.host for host in known.values())

    def where(session_id: str) -> str:
        host = known.get(session_id, state.host)
        return f" (in a {CLIENT_NAMES.get(host, host)} session)" if mixed else ""

    made = dict(zip(state.decisions, state.decision_sessions, strict=False))
    # Whatever the record holds is data: a passage that addresses the model is left out.
    tasks = [safe(f"- [{t.status.replace('_', ' ')}] {t.content}") for t in state.open_todos]
    open_notes = [n for n in [*state.open_failures, *state.project_failures] if not n.resolved]
    failures = [safe(f"- {line}{where(note.session_id)}") for line, note in open_lines(open_notes)]
    decisions = [safe(f"- {d}{where(made.get(d, ''))}") for d in state.decisions]
    rules = [f"- {c}" for c in state.constraints]  # the user's own words, as written
    in_force = max(state.constraints_in_force, len(state.constraints))
    if not (tasks or failures or rules or in_force):
        return ""  # decisions alone leave nothing open
    title = f'"{state.title}"' if state.title else "(untitled)"
    client = CLIENT_NAMES.get(state.host, state.host)
    head = (
        f"ctxd project memory: left open by session {title} ({state.session_id[:8]}, "
        f"{client}), recorded {state.created_at[:16].replace('T', ' ')} UTC."
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
                        ("Decisions taken:", decisions),
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
