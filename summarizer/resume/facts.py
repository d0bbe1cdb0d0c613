"""A session's facts from the index, the resume state's input, read in a few bounded queries."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from indexer import Entry, history, query
from summarizer.common.acks import latest_request
from summarizer.common.models import Failure
from summarizer.common.plain import clean_line, is_meaningful_request
from summarizer.resume.todos import Todo, session_todos

__all__ = ["RECENT_TOOL_CALLS", "SessionFacts", "gather_facts"]

# "Recently" for confidence: this many of the session's last tool calls (all agents).
RECENT_TOOL_CALLS = 40
_TOOL_EVENTS = ("tool_result", "tool_failure", "agent_complete", "agent_launched", "agent_failed")


@dataclass
class SessionFacts:
    """What the index knows about one session, read once, for the pure functions of state.py."""

    session_id: str
    title: str = ""
    first_ns: int = 0
    cwd: str = ""
    tool_calls: list[Entry] = field(default_factory=list)  # newest first
    file_events: list[Entry] = field(default_factory=list)  # newest first
    failures: list[Entry] = field(default_factory=list)  # newest first
    session_failures: list[Failure] = field(default_factory=list)  # the memory's, this session's
    last_prompt: str = ""
    compact_summary: str = ""
    running_agents: list[tuple[str, str, str]] = field(default_factory=list)  # id, type, desc
    todos: list[Todo] = field(default_factory=list)
    watermark: int = 0
    last_event: str = ""
    covers_ns: int = 0
    host: str = "claude"


def gather_facts(conn: sqlite3.Connection, session_id: str) -> SessionFacts:
    """Read the facts of one session with a few bounded queries (cost independent of length)."""
    facts = SessionFacts(session_id)
    header = query.session_header(conn, session_id)
    if header:
        facts.title = header[0] or _title_from(conn, session_id, header[1])
        facts.first_ns, facts.cwd = header[2], header[3]

    def entries(kind: str, limit: int) -> list[Entry]:
        return history.recent_entries(conn, session_id, kind, limit)

    facts.tool_calls = history.recent_entries(
        conn, session_id, "events", RECENT_TOOL_CALLS, _TOOL_EVENTS
    )
    facts.file_events = entries("file_events", 400)
    facts.failures = entries("failures", 400)
    facts.session_failures = _session_failures(conn, session_id)
    # An acknowledgement ("yes", "continue") is never the request: it is noted after it.
    facts.last_prompt = latest_request([e.text for e in entries("prompt", 10)])
    summary = entries("compact_summary", 1)
    facts.compact_summary = summary[0].text if summary else ""
    facts.running_agents = query.running_agents(conn, session_id)
    facts.todos = session_todos(conn, session_id)
    last = query.last_entry(conn, session_id)
    if last:
        facts.watermark, facts.last_event = last
    facts.covers_ns = query.newest_activity_ns(conn, session_id)
    facts.host = query.session_host(conn, session_id)
    return facts


def _session_failures(conn: sqlite3.Connection, session_id: str) -> list[Failure]:
    try:
        from summarizer.memory.reader import session_failures
    except ImportError:  # the memory is optional here (see writer.load_memory_or_none)
        return []
    return session_failures(conn, session_id)


def _title_from(conn: sqlite3.Connection, session_id: str, first_prompt: str) -> str:
    """The first request that says what the work is (not "continue" or a slash command)."""
    prompts = [first_prompt, *query.session_prompts(conn, session_id, 20)]
    for prompt in prompts:
        line = clean_line(prompt.strip().split("\n", 1)[0], 200)
        if is_meaningful_request(line):
            return _shorten(line)
    return ""


def _shorten(text: str, limit: int = 80) -> str:
    line = " ".join(text.strip().split("\n", 1)[0].split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
