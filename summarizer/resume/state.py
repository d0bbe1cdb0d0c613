"""Resume state of a session, built from its facts: confidence, files, failures (seed 003)."""

from __future__ import annotations

import os
from typing import Any

import msgspec

from indexer import EDIT_TOOLS, Entry, iso_utc
from summarizer.common.failures import command_head, is_check
from summarizer.common.models import Memory
from summarizer.common.plain import (
    clean_line,
    clean_text,
    unwrap_summary,
)
from summarizer.common.text import STRONG_DECISION_RE
from summarizer.resume.facts import SessionFacts
from summarizer.resume.failure_notes import FailureNote, failure_notes, note_of
from summarizer.resume.todos import Todo, open_todos

__all__ = [
    "CLIENT_NAMES",
    "MAX_FILES",
    "FailureNote",
    "ResumeState",
    "ToolCall",
    "build_state",
    "confidence_of",
    "open_failures_of",
    "rank_files",
]

STATE_VERSION = 1
MAX_FILES = 10
MAX_TOOL_CALLS = 10
MAX_PROJECT_FAILURES = 5
_READ_TOOLS = frozenset({"Read", "NotebookRead"})
# Bookkeeping tools: their calls say nothing about where the work stood.
_QUIET_TOOLS = frozenset(
    {
        "TodoWrite",
        "TaskCreate",
        "TaskUpdate",
        "TaskList",
        "TaskGet",
        "ToolSearch",
        "BashOutput",
        "TaskOutput",
        "KillShell",
        "KillBash",
    }
)
# The clients a session can run in, by the host name the session catalog keeps.
CLIENT_NAMES = {"claude": "Claude Code", "codex": "Codex"}
_ANY = msgspec.json.Decoder()


class ToolCall(msgspec.Struct):
    """One of the last tool calls (seed 003 `last_tool_calls`)."""

    tool: str
    file: str
    timestamp: str
    agent: str = "main"
    ok: bool = True


class ResumeState(msgspec.Struct):
    """precompact_state.json; new fields get defaults, existing ones never change meaning."""

    session_id: str
    trigger: str  # pre_compact | session_end | compaction | session_start
    active_project: str
    active_agent: str
    confidence: str  # high | medium | low
    detection_method: str
    created_at: str
    version: int = STATE_VERSION
    title: str = ""
    started_at: str = ""
    last_tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    files_to_load: list[str] = msgspec.field(default_factory=list)
    edited_files: list[str] = msgspec.field(default_factory=list)  # of files_to_load
    missing_files: list[str] = msgspec.field(default_factory=list)  # of files_to_load
    current_task: Todo | None = None
    open_todos: list[Todo] = msgspec.field(default_factory=list)
    open_failures: list[FailureNote] = msgspec.field(default_factory=list)
    decisions: list[str] = msgspec.field(default_factory=list)
    constraints: list[str] = msgspec.field(default_factory=list)
    decision_sessions: list[str] = msgspec.field(default_factory=list)  # one per decision
    agents_in_flight: list[str] = msgspec.field(default_factory=list)
    constraints_in_force: int = 0  # all of them; `constraints` holds the first ones
    # The project's unresolved failures of other sessions (a new session's startup memory).
    project_failures: list[FailureNote] = msgspec.field(default_factory=list)
    project_dir: str = ""  # the notes show paths under it relative to it
    last_check: str = ""  # the last command that checked the work (tests, a build, a linter)
    last_check_failed: bool = False
    last_check_at: str = ""
    next_action: str = ""
    compact_summary: str = ""
    watermark: int = 0  # the last entry id of the session this state covers
    covers_ns: int = 0  # ts_ns of the newest event it covers (spool_tail.IGNORED_EVENTS aside)
    context_tokens: int = 0
    context_chars: int = 0
    host: str = "claude"  # the client the session ran in: "claude" (Claude Code) or "codex"


# --- pure decisions ---------------------------------------------------------------------


def confidence_of(facts: SessionFacts) -> tuple[str, str]:
    """(confidence, detection method): high after recent edits, medium after reads or with an
    agent in flight, low otherwise (seed 003, over the last RECENT_TOOL_CALLS tool calls)."""
    recent = [e for e in facts.tool_calls if e.event == "tool_result"]
    if any(e.tool_name in EDIT_TOOLS for e in recent):
        return "high", "index:recent_edits"
    if any(e.tool_name in _READ_TOOLS for e in recent):
        return "medium", "index:recent_reads"
    if facts.running_agents:
        return "medium", "index:agent_in_flight"
    return "low", "index:no_recent_file_activity"


def rank_files(file_events: list[Entry], limit: int = MAX_FILES) -> tuple[list[str], set[str]]:
    """(edited files newest first, then read ones, at most `limit`; the edited ones).

    A file keeps its place whether or not it exists on disk now (deleted, renamed, or on
    another filesystem): the caller marks missing ones instead of dropping them.
    """
    edited: dict[str, None] = {}
    read: dict[str, None] = {}
    for e in file_events:
        for name in e.files:
            path = name if os.path.isabs(name) or not e.cwd else os.path.join(e.cwd, name)
            (edited if e.tool_name in EDIT_TOOLS else read).setdefault(path, None)
    ranked = [*edited, *(p for p in read if p not in edited)][:limit]
    return ranked, {p for p in ranked if p in edited}


def open_failures_of(facts: SessionFacts, memory: Memory | None) -> list[FailureNote]:
    """The session's failures: every unresolved one (the memory's, then what the session did
    since the memory last caught up), then a few resolved ones with what fixed them."""
    rows = {f.signature: f for f in facts.session_failures}
    for f in memory.failures if memory is not None else []:
        rows.setdefault(f.signature, f)
    return failure_notes(facts.session_id, list(rows.values()), facts.failures)


def project_failures_of(facts: SessionFacts, memory: Memory | None) -> list[FailureNote]:
    """The project's unresolved failures seen last in other sessions, best-ranked first."""
    others = [
        f
        for f in (memory.failures if memory is not None else [])
        if not f.resolved and f.session_id != facts.session_id
    ]
    return [note_of(f) for f in sorted(others, key=lambda f: -f.score)[:MAX_PROJECT_FAILURES]]


def build_state(
    facts: SessionFacts,
    trigger: str,
    project_dir: str,
    memory: Memory | None,
    now_ns: int,
    exists: Any = os.path.isfile,
) -> ResumeState:
    """The resume state of a session from its facts (pure apart from `exists`)."""
    level, method = confidence_of(facts)
    files, edited = rank_files(facts.file_events)
    todos = open_todos(facts.todos)
    current = next((t for t in todos if t.status == "in_progress"), None)
    decisions: list[str] = []
    decision_sessions: list[str] = []
    constraints: list[str] = []
    if memory is not None:
        # A request or Claude Code's summary counts only where it states a decision outright
        # ("decided", "going with"): a user's task description is not a decision.
        stated = [
            d
            for d in memory.decisions
            if not d.source
            or set(d.source.split(",")) - {"user_prompt", "compact_summary"}
            or STRONG_DECISION_RE.search(d.decision)
        ]
        ranked = sorted(stated, key=lambda d: -d.score)
        decisions = [clean_line(d.decision, 300) for d in ranked[:5]]
        decision_sessions = [d.session_id for d in ranked[:5]]
        constraints = [c.description for c in memory.constraints if c.active]
    calls = [
        ToolCall(
            tool=e.tool_name,
            file=e.files[0] if e.files else _clip(_command(e) or e.description, 160),
            timestamp=iso_utc(e.ts_ns),
            agent=e.agent_id,
            ok=e.event not in ("tool_failure", "agent_failed"),
        )
        for e in [c for c in facts.tool_calls if c.tool_name not in _QUIET_TOOLS][:MAX_TOOL_CALLS]
    ]
    agents = [
        f"{a} ({t})" + (f": {_clip(d, 160)}" if d else "") for a, t, d in facts.running_agents
    ]
    return ResumeState(
        session_id=facts.session_id,
        trigger=trigger,
        active_project=os.path.basename(project_dir.rstrip("/")) or project_dir,
        active_agent=facts.running_agents[0][0] if facts.running_agents else "main",
        confidence=level,
        detection_method=method,
        created_at=iso_utc(now_ns),
        title=facts.title,
        started_at=iso_utc(facts.first_ns) if facts.first_ns else "",
        last_tool_calls=calls,
        files_to_load=files,
        edited_files=[p for p in files if p in edited],
        missing_files=[p for p in files if not exists(p)],
        current_task=current,
        open_todos=todos,
        open_failures=open_failures_of(facts, memory),
        decisions=decisions,
        constraints=constraints,
        constraints_in_force=max(memory.constraints_in_force if memory else 0, len(constraints)),
        decision_sessions=decision_sessions,
        agents_in_flight=agents,
        next_action=_clip(clean_text(facts.last_prompt).strip(), 2000),
        compact_summary=clean_text(unwrap_summary(facts.compact_summary)),
        watermark=facts.watermark,
        covers_ns=facts.covers_ns,
        project_dir=project_dir,
        host=facts.host,
        project_failures=project_failures_of(facts, memory),
        **_last_check(facts.failures),
    )


def _last_check(calls: list[Entry]) -> dict[str, Any]:
    """The newest command among `calls` (newest first) that checked the work, and its fate."""
    for e in calls:
        command = _command(e)
        if command and is_check(command_head(command)):
            failed = e.event == "tool_failure" or bool(e.error)
            return {
                "last_check": _clip(command, 160),
                "last_check_failed": failed,
                "last_check_at": iso_utc(e.ts_ns),
            }
    return {}


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _command(e: Entry) -> str:
    """A Bash call's command line (from the stored tool input), else ""."""
    if e.tool_name != "Bash" or not bytes(e.detail):
        return ""
    try:
        detail = _ANY.decode(bytes(e.detail))
    except (msgspec.DecodeError, ValueError):
        return ""
    tool_input = detail.get("input") if isinstance(detail, dict) else None
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    return " ".join(command.split()) if isinstance(command, str) else ""
