"""context.md: the resume state as calm, factual text within `[resume]` max_tokens and max_chars."""

from __future__ import annotations

from indexer import Config
from summarizer.common.budget import Section, pack_sections, render_sections, utf16_len
from summarizer.common.neutralize import neutralize
from summarizer.common.plain import clean_line
from summarizer.common.tokens import get_counter
from summarizer.memory.inject_cache import more_constraints_line
from summarizer.resume.failure_notes import note_lines
from summarizer.resume.handback import NOTES_HEAD
from summarizer.resume.state import ResumeState

__all__ = ["render_context", "sections_of"]

# Claude Code treats instruction-like text with suspicion (hooks reference §4.3), so the text
# states what was going on; it never orders. Section shares of the token budget; what a section
# leaves unused flows to the summary, which comes last because it is the most compressible.
_SHARES = {
    "lead": 0.15,
    "tasks": 0.15,
    "files": 0.12,
    "failures": 0.12,
    "constraints": 0.07,
    "decisions": 0.05,
    "agents": 0.05,
    "calls": 0.08,
    "pickup": 0.08,
}
PICKUP_HEAD = "\nWhere to pick up (suggestions from the record):"
_TRIGGER_WORDS = {
    "pre_compact": "just before the conversation was compacted",
    "session_end": "when the session ended",
    "compaction": "at a periodic update",
    # Built by the SessionStart hook itself (after a compaction, or on resume): the time says it.
    "session_start": "",
}


def sections_of(state: ResumeState, running_summary: str, max_tokens: int) -> list[Section]:
    """The context's sections, most important first; items are plain text lines.

    Each fact appears once: the task in progress is not listed again under open tasks, and
    `running_summary` (the project's, which may describe other sessions) is not used.
    """

    def budget(name: str) -> int:
        return max(1, int(max_tokens * _SHARES[name]))

    title = f'"{clean_line(state.title, 100)}"' if state.title else "(untitled)"
    started = f", started {state.started_at[:16].replace('T', ' ')} UTC" if state.started_at else ""
    when = _TRIGGER_WORDS.get(state.trigger, state.trigger)
    at = f"{state.created_at[:19].replace('T', ' ')} UTC"
    lead = [
        f"{NOTES_HEAD} {title} ({state.session_id[:8]}{started}), "
        + (f"as recorded {when} ({at})." if when else f"as recorded at {at}."),
    ]
    current = state.current_task
    if current is not None:
        lead.append(f"Task in progress: {clean_line(current.content, 300)}.")
    if state.next_action:
        lead.append(f"Most recent user request: {clean_line(state.next_action, 600)}")
    tasks = [
        f"- [{t.status.replace('_', ' ')}] {clean_line(t.content, 200)}"
        + (f" (#{t.id})" if t.id else "")
        for t in state.open_todos
        if current is None or t.content != current.content
    ]
    edited, missing = set(state.edited_files), set(state.missing_files)
    root = state.project_dir.rstrip("/")
    under = root and any(p.startswith(root + "/") for p in state.files_to_load)
    files = [
        f"- {_shown_path(path, root)} ({'edited' if path in edited else 'read'}"
        + (", not on disk now)" if path in missing else ")")
        for path in state.files_to_load
    ]
    # Every unresolved failure is listed (a section may not drop them: min_items), one line
    # each; then a few resolved ones with what fixed them.
    open_lines, resolved_lines = note_lines(state.open_failures)
    failures = [f"- {clean_line(line, 1500)}" for line in open_lines + resolved_lines]
    constraints = [f"- {clean_line(c, 300)}" for c in state.constraints]
    decisions = [f"- {clean_line(d, 300)}" for d in state.decisions]
    agents = [f"- {clean_line(a, 200)}" for a in state.agents_in_flight]
    # A call on a file already listed above would say that file again: only the others
    # (commands, agents, searches) are listed, with their time.
    listed = set(state.files_to_load)
    calls = [
        f"- {c.timestamp[11:19]} {c.tool or 'tool'} {_target(c.tool, _shown_path(c.file, root))}"
        + ("" if c.ok else " (failed)")
        for c in state.last_tool_calls
        if c.file not in listed
    ]
    # Claude Code's own compaction summary is not repeated: the conversation holds it already.
    pickup = _pickup(state, root)
    files_head = f"\nFiles worked on lately (paths under {root}):" if under else (
        "\nFiles worked on lately:"
    )
    # Whatever the record holds is data: a passage that addresses the model is left out of
    # it. The user's own rules are the exception: they are the user's words, kept as written
    # (the latest request is not: a prompt may hold pasted output).
    lead = [lead[0], *_safe(lead[1:])]
    tasks, files, failures = _safe(tasks), _safe(files), _safe(failures)
    decisions, agents, calls = _safe(decisions), _safe(agents), _safe(calls)
    return [
        Section("lead", "", lead, budget("lead"), min_items=len(lead)),
        Section("tasks", "\nOpen tasks:", tasks, budget("tasks")),
        Section("files", files_head, files, budget("files")),
        Section(
            "failures",
            "\nFailures, unresolved first:",
            failures,
            budget("failures"),
            min_items=len(open_lines),
        ),
        Section("constraints", "\nThe user's constraints in force:", constraints,
                budget("constraints")),
        Section("decisions", "\nDecisions in force:", decisions, budget("decisions")),
        Section("agents", "\nSubagents still running:", agents, budget("agents")),
        Section("calls", "\nLast tool calls (UTC):", calls, budget("calls")),
        Section("pickup", PICKUP_HEAD, pickup, budget("pickup"), min_items=len(pickup)),
    ]


def _safe(lines: list[str]) -> list[str]:
    return [neutralize(line)[0] for line in lines]


def _shown_path(path: str, root: str) -> str:
    return path[len(root) + 1 :] if root and path.startswith(root + "/") else path


def _pickup(state: ResumeState, root: str) -> list[str]:
    """Where the work stood, as suggestions drawn from the record (never orders)."""
    out = []
    if state.last_check:
        when = state.last_check_at[11:16]
        fate = "failed; running it again shows whether the fix holds" if state.last_check_failed \
            else "passed"  # fmt: skip
        out.append(f"- The last check was `{clean_line(state.last_check, 120)}` ({when} UTC):"
                   f" it {fate}.")  # fmt: skip
    reread = [_shown_path(p, root) for p in state.edited_files if p not in state.missing_files]
    if reread:
        out.append(f"- Files to re-read first: {', '.join(reread[:3])}.")
    if state.current_task is None and state.open_todos:  # (the task in progress leads)
        out.append(f"- The next open task: {clean_line(state.open_todos[0].content, 200)}.")
    return out


def _target(tool: str, target: str) -> str:
    """A call's target without the tool name repeated ("ToolSearch ToolSearch select:…")."""
    target = clean_line(target, 160)
    return target[len(tool) :].lstrip() if tool and target.startswith(tool + " ") else target


def render_context(
    state: ResumeState, running_summary: str, config: Config
) -> tuple[str, int, int]:
    """(context text, its tokens, its UTF-16 length): within both `[resume]` budgets (I9)."""
    counter = get_counter(config.summarizer.encoding)
    max_tokens = config.resume.max_tokens
    max_chars = min(config.resume.max_chars, 10000)
    sections = sections_of(state, running_summary, max_tokens)

    def _cut(text: str, tokens: int) -> str:
        # A list line cut in half reads as noise ("- 03 …"): drop it; prose may be cut.
        return "" if text.startswith("- ") else counter.truncate(text, tokens)

    packed = pack_sections(
        sections,
        max_tokens,
        counter.count,
        max_chars=max_chars,
        truncate=_cut,
        flow_to="calls",
        char_len=utf16_len,
    )
    # A constraint is never dropped silently: the notes say how many more are in force. Its
    # line takes the place of the last constraints kept, else of the least important lines.
    in_force = max(state.constraints_in_force, len(state.constraints))
    packed = {name: list(items) for name, items in packed.items()}
    kept = packed["constraints"]
    victims = ["calls", "agents", "decisions", "files"]
    while True:
        more = in_force - len(kept)
        shown = {**packed, "constraints": kept + ([more_constraints_line(more)] if more else [])}
        text = _unique_lines(render_sections(shown, sections))
        tokens, chars = counter.count(text), utf16_len(text)
        if tokens <= max_tokens and chars <= max_chars:
            break
        if kept:
            kept.pop()
        elif any(packed[v] for v in victims):
            packed[next(v for v in victims if packed[v])].pop()
        else:  # only the line itself is left to give up: the packed text fits without it
            in_force = len(kept)
    return text, tokens, chars


def _unique_lines(text: str) -> str:
    """Drop a non-empty line that repeats an earlier one (a summary quoting the request)."""
    seen: set[str] = set()
    out = []
    for line in text.split("\n"):
        key = line.strip().lstrip("-* ").strip()
        if key and key in seen:
            continue
        seen.add(key)
        out.append(line)
    return "\n".join(out)
