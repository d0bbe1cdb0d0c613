"""Memory for a new session: open tasks, unresolved failures and constraints, ≤ 400 tokens.

With `[team] startup = true` the team's decisions and constraints in force (from the other
machines of the project, kept in `context/team-notes.json` by the daemon's shipping) fill
what the local memory leaves of the same budget.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence

import msgspec

from indexer import Config, StateDirError, StatePaths, check_session_id, safefs, write_atomic
from summarizer.common.neutralize import neutralize
from summarizer.common.plain import clean_line
from summarizer.memory.inject_cache import more_constraints_line
from summarizer.resume.failure_notes import open_lines
from summarizer.resume.files import LATEST_FILE, STARTUP_FILE, STATE_FILE
from summarizer.resume.state import CLIENT_NAMES, ResumeState

__all__ = [
    "STARTUP_MAX_TOKENS",
    "TEAM_NOTES_FILE",
    "TeamNote",
    "read_team_notes",
    "render_startup",
    "write_startup",
    "write_team_notes",
]

STARTUP_MAX_TOKENS = 400
TEAM_NOTES_FILE = "team-notes.json"
_TEAM_HEAD = "Team decisions and constraints (other machines of this project):"


class TeamNote(msgspec.Struct, frozen=True):
    """One item of the team's memory for new sessions: its kind, its text, and who said it."""

    kind: str  # constraint | decision
    text: str
    who: str  # user@host


def render_startup(
    state: ResumeState | None,
    count: Callable[[str], int],
    max_tokens: int = STARTUP_MAX_TOKENS,
    hosts: Mapping[str, str] | None = None,
    team: Sequence[TeamNote] = (),
) -> str:
    """What a new session of this project should know, or "" when nothing is open (pure).

    Only what is still in force: the last session's open tasks, the project's unresolved
    failures (the last session's, then the others'), its decisions and the active constraints,
    then the team's constraints and decisions. Lines are added in that order while they fit
    `max_tokens`; a constraint that does not fit is counted in a last line, never dropped
    silently. `hosts` maps sessions to the client they ran in: when they are not all the last
    session's, each failure and decision says which client it came from.
    """
    text = _local(state, count, max_tokens, hosts) if state is not None else ""
    if not team:
        return text
    base = text.rstrip("\n") or "ctxd project memory: what the team decided."
    added = False
    for note in team:
        # Another machine's memory is recorded data too: what addresses the model is left out.
        line = clean_line(safe(f"- [{note.kind}] {note.text} ({note.who})"), 300)
        candidate = base + ("" if added else f"\n\n{_TEAM_HEAD}") + "\n" + line
        if count(candidate) > max_tokens:
            break
        base, added = candidate, True
    return base + "\n" if added else text


def _local(
    state: ResumeState,
    count: Callable[[str], int],
    max_tokens: int,
    hosts: Mapping[str, str] | None,
) -> str:
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


def read_team_notes(paths: StatePaths, config: Config) -> list[TeamNote]:
    """The team notes the daemon keeps, when `[team] startup` is on (else none)."""
    if not config.team.startup or not (paths.context / TEAM_NOTES_FILE).is_file():
        return []
    try:
        data = safefs.read_bytes(paths.root, paths.context / TEAM_NOTES_FILE)
        return msgspec.json.decode(data, type=list[TeamNote])
    except (OSError, StateDirError, ValueError):
        return []


def write_team_notes(paths: StatePaths, config: Config, notes: list[TeamNote]) -> bool:
    """Keep the team's notes and rebuild `startup.md` with them; False if they are unchanged
    (then nothing is written, and the tokenizer is not loaded)."""
    if read_team_notes(paths, config) == notes and (paths.context / TEAM_NOTES_FILE).exists():
        return False
    write_atomic(paths.context / TEAM_NOTES_FILE, msgspec.json.encode(notes), root=paths.root)
    from summarizer.common.tokens import get_counter

    counter = get_counter(config.summarizer.encoding)
    write_startup(paths, render_startup(_latest_state(paths), counter.count, team=notes))
    return True


def _latest_state(paths: StatePaths) -> ResumeState | None:
    """The resume state written last (whose open work is the project's now), if readable."""
    if not (paths.resume / LATEST_FILE).is_file():
        return None
    try:
        latest = json.loads(safefs.read_bytes(paths.root, paths.resume / LATEST_FILE))
        sid = check_session_id(str(latest["session_id"]))
        data = safefs.read_bytes(paths.root, paths.resume / sid / STATE_FILE)
        return msgspec.json.decode(data, type=ResumeState)
    except (OSError, StateDirError, ValueError, KeyError, TypeError):
        return None
