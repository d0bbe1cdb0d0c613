"""Session catalog: list sessions, resolve a session reference, build its resume package."""

from __future__ import annotations

import re
import sqlite3
import time
from dataclasses import asdict, dataclass
from typing import Any

import msgspec

from indexer import Config, CtxdError, StatePaths, history, iso_utc, query
from summarizer.common.neutralize import neutralize
from summarizer.common.plain import is_meaningful_request
from summarizer.resume import writer as resume
from summarizer.resume.failure_notes import FailureNote, note_lines
from summarizer.resume.todos import open_todos, read_todos_file

__all__ = [
    "AmbiguousSessionError",
    "SessionInfo",
    "SessionNotFoundError",
    "list_sessions",
    "render_package",
    "resolve_session",
    "resume_package",
    "session_title",
    "stamp_of",
]

_STAMP_RE = re.compile(r"\d{4}(-\d{2}){0,5}")
_MAX_CANDIDATES = 5
_LAST_ENTRIES = 15


class SessionNotFoundError(CtxdError):
    """No session matches the reference given."""


class AmbiguousSessionError(CtxdError):
    """Several sessions match the reference given."""


@dataclass(frozen=True)
class SessionInfo:
    """One row of the catalog (ARCHITECTURE §8, seed 002)."""

    session_id: str
    stamp: str  # YYYY-MM-DD-HH-MM-SS of the first event, UTC
    title: str
    cwd: str
    started: str
    last_activity: str
    events: int
    agents: int
    failures: int
    status: str  # active | ended | compacted
    end_reason: str
    compactions: int
    host: str = "claude"  # the client the session ran in: "claude" (Claude Code) or "codex"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def stamp_of(ts_ns: int) -> str:
    """The human-readable start stamp `YYYY-MM-DD-HH-MM-SS` (UTC) of a time in ns."""
    return time.strftime("%Y-%m-%d-%H-%M-%S", time.gmtime(ts_ns // 1_000_000_000))


def session_title(title: str, first_prompt: str, limit: int = 80) -> str:
    """Claude Code's session title, else the first prompt's first line, shortened."""
    if title.strip():
        return title.strip()
    line = " ".join(first_prompt.strip().split("\n", 1)[0].split())
    if not is_meaningful_request(line):
        return ""  # "continue" is no title; resume_package looks further
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _info(row: Any) -> SessionInfo:
    return SessionInfo(
        session_id=str(row[0]),
        stamp=stamp_of(int(row[1])),
        title=session_title(str(row[4]), str(row[5])),
        cwd=str(row[3]),
        started=iso_utc(int(row[1])),
        last_activity=iso_utc(int(row[2])),
        events=int(row[6]),
        agents=int(row[11]),
        failures=int(row[7]),
        status=str(row[8]),
        end_reason=str(row[9]),
        compactions=int(row[10]),
        host=str(row[12]) or "claude",
    )


def list_sessions(conn: sqlite3.Connection, limit: int | None = None) -> list[SessionInfo]:
    """Every session, newest start first (ties by id, so the order is stable)."""
    return [_info(r) for r in query.session_rows(conn, limit=limit)]


def resolve_session(conn: sqlite3.Connection, ref: str) -> SessionInfo:
    """The session named by `ref`: its id, a unique id prefix, or its start stamp (or a unique
    prefix of it), case-insensitively. Raises SessionNotFoundError or AmbiguousSessionError."""
    key = ref.strip().lower()
    if not key:
        raise SessionNotFoundError("empty session reference; run `ctxd sessions` to list them")
    exact = query.session_rows(conn, session_id=key)
    if len(exact) == 1:
        return _info(exact[0])
    rows = query.session_rows(conn, id_prefix=key)
    found = {str(r[0]): _info(r) for r in rows}
    if _STAMP_RE.fullmatch(key):
        by_stamp = [i for i in list_sessions(conn) if i.stamp.startswith(key)]
        exact_stamp = [i for i in by_stamp if i.stamp == key]
        if len(exact_stamp) == 1:
            return exact_stamp[0]
        for info in by_stamp:
            found.setdefault(info.session_id, info)
    if len(found) == 1:
        return next(iter(found.values()))
    if not found:
        raise SessionNotFoundError(
            f"no session matches {ref!r}; run `ctxd sessions` to list ids and start stamps"
        )
    shown = list(found.values())[:_MAX_CANDIDATES]
    more = f" and {len(found) - len(shown)} more" if len(found) > len(shown) else ""
    listed = ", ".join(f"{i.session_id} ({i.stamp})" for i in shown)
    raise AmbiguousSessionError(
        f"{ref!r} matches {len(found)} sessions: {listed}{more}; give more of the id"
    )


def resume_package(
    conn: sqlite3.Connection, paths: StatePaths, config: Config, info: SessionInfo
) -> dict[str, Any]:
    """Everything needed to pick a session up again, as plain data (for JSON or markdown)."""
    facts = resume.gather_facts(conn, info.session_id)
    memory = resume.load_memory_or_none(conn)
    state = resume.build_state(
        facts, "resume", resume.project_dir_of(paths, facts.cwd), memory, time.time_ns()
    )
    todos_file = paths.session_dir(info.session_id) / "todos.json"
    notes: list[str] = []
    if todos_file.exists() and read_todos_file(todos_file) is None:
        notes.append(f"{todos_file} is not valid JSON; the todos shown come from the index")
    saved = resume.read_state(paths, info.session_id)
    state_file = paths.resume / info.session_id / resume.STATE_FILE
    if saved is None and state_file.exists():
        notes.append(f"{state_file} is not valid JSON; it is rewritten at the next compaction")
    last = history.session_entries(conn, info.session_id, _LAST_ENTRIES)
    agents = query.recent_agents(conn, info.session_id, 10)
    return {
        "session": {**info.to_dict(), "title": info.title or state.title},
        # This session's own compaction summary only: the project's running summary may be
        # about another session.
        "summary": neutralize(state.compact_summary)[0],
        "current_task": msgspec.to_builtins(state.current_task),
        "open_todos": msgspec.to_builtins(open_todos(facts.todos)),
        "open_failures": msgspec.to_builtins(state.open_failures),
        "decisions": state.decisions,
        "constraints": state.constraints,
        "agents": [
            {"agent_id": a[0], "agent_type": a[1], "status": a[2], "description": a[3]}
            for a in agents
        ],
        "files": state.files_to_load,
        "next_action": state.next_action,
        "confidence": state.confidence,
        "last_entries": [
            {
                "timestamp": iso_utc(e.ts_ns),
                "agent_id": e.agent_id,
                "event": e.event,
                "description": neutralize(e.description)[0],
            }
            for e in last
        ],
        "resume_state": saved,
        "notes": notes,
    }


def render_package(pkg: dict[str, Any]) -> str:
    """The resume package as markdown for people (recorded text that addresses the model is
    left out)."""
    return neutralize(_render_package(pkg))[0]


def _render_package(pkg: dict[str, Any]) -> str:
    s = pkg["session"]
    out = [f"# {s['title'] or '(untitled)'}", ""]
    end = f" ({s['end_reason']})" if s["end_reason"] else ""
    out += [
        f"- session: {s['session_id']} (started {s['stamp']} UTC, last activity "
        f"{s['last_activity']})",
        f"- status: {s['status']}{end}; {s['events']} events, {s['agents']} agents, "
        f"{s['failures']} failures, {s['compactions']} compactions",
        f"- cwd: {s['cwd'] or '-'}",
    ]
    task = pkg["current_task"]
    out += ["", "## Where it stood", ""]
    out.append(f"Task in progress: {task['content']}" if task else "No task in progress.")
    if pkg["next_action"]:
        out.append(f"Last user request: {pkg['next_action']}")

    def block(title: str, lines: list[str]) -> None:
        if lines:
            out.extend(["", f"## {title}", "", *lines])

    block("Open todos", [f"- [{t['status']}] {t['content']}" for t in pkg["open_todos"]])
    notes = [msgspec.convert(f, FailureNote) for f in pkg["open_failures"]]
    open_lines, resolved_lines = note_lines(notes)
    block("Failures, unresolved first", [f"- {line}" for line in open_lines + resolved_lines])
    block(
        "Decisions and constraints",
        [f"- {d}" for d in pkg["decisions"]] + [f"- (constraint) {c}" for c in pkg["constraints"]],
    )
    more = int(s["agents"]) - len(pkg["agents"])
    listed = [f"- {a['agent_id']} ({a['agent_type']}): {a['status']}" for a in pkg["agents"]]
    if more > 0:
        listed.append(f"- +{more} more (`ctxd agents {s['session_id']}` lists them all)")
    block("Agents", listed)
    block("Files", [f"- {f}" for f in pkg["files"]])
    block(
        "Claude Code's compaction summary, as recorded",
        [pkg["summary"]] if pkg["summary"] else [],
    )
    block(
        "Last entries",
        [
            f"- {e['timestamp']} {e['agent_id']} {e['event']}: {e['description']}"
            for e in pkg["last_entries"]
        ],
    )
    block("Notes", [f"- {n}" for n in pkg["notes"]])
    return "\n".join(out) + "\n"
