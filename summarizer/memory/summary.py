"""The running summary and the four context files of seed 004, written atomically (I9, I11)."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from indexer import StatePaths, SummarizerConfig, history, iso_utc, query, write_atomic
from summarizer.common.failures import quoted
from summarizer.common.models import Memory
from summarizer.common.neutralize import neutralize
from summarizer.common.text import clip
from summarizer.common.tokens import TokenCounter
from summarizer.memory.backend import SummaryBackend, clamp

FORMAT_VERSION = 1
SUMMARY_FILE = "running-summary.json"
DECISIONS_FILE = "key-decisions.json"
FAILURES_FILE = "failure-memory.json"
CONSTRAINTS_FILE = "active-constraints.json"


@dataclass(frozen=True)
class Published:
    """What one publication wrote."""

    summary: str
    summary_tokens: int
    watermark: int
    backend: str


def _iso(ns: int) -> str:
    return iso_utc(ns) if ns else ""


def _join(parts: list[str], limit: int = 8) -> str:
    return "; ".join(parts[:limit]) + (
        f"; +{len(parts) - limit} more" if len(parts) > limit else ""
    )


def summary_lines(
    conn: sqlite3.Connection, memory: Memory, session_id: str | None = None
) -> list[str]:
    """The extractive running summary, most important line first (each line self-contained).

    It describes `session_id`, by default the latest session with Claude Code activity.
    """
    if session_id is None:
        session_id = history.get_meta(conn, "mem.last_session", "")
    lines: list[str] = []
    sess = query.session_stats(conn, session_id)
    mine = conn.execute(
        "SELECT todos, prompt, report, compact FROM mem_sessions WHERE session_id=?",
        (session_id,),
    ).fetchone() or ("[]", "", "", "")
    if sess:
        title, first_prompt, events, failures, compactions, last_ns, status = sess
        name = f' "{clip(title, 80)}"' if title else ""
        # The numbers must agree with each other: a session whose compaction was requested
        # (PreCompact) but not yet reported (PostCompact) is "being compacted", not "compacted
        # with 0 compactions".
        state = status
        if status == "compacted":
            state = f"compacted {compactions}×" if compactions else "being compacted"
        lines.append(
            f"Session {session_id[:8]}{name}: {events} events, {failures} failed tool calls, "
            f"{state}, last activity {_iso(int(last_ns))}."
        )
        if mine[1]:
            lines.append(f"Latest request: {mine[1]}")
        if first_prompt and not mine[1].startswith(clip(" ".join(first_prompt.split()), 100)[:60]):
            lines.append(f"First request: {clip(' '.join(first_prompt.split()), 300)}")
    lines += _feature_lines(memory)
    todos = json.loads(mine[0])
    if todos:
        groups: dict[str, list[str]] = {}
        for _tid, content, status in todos:
            groups.setdefault(status or "pending", []).append(clip(content, 80))
        order = ["in_progress", "pending", "completed"]
        parts = [f"{s.replace('_', ' ')}: {_join(groups[s], 6)}" for s in order if s in groups]
        parts += [f"{s}: {_join(v, 6)}" for s, v in groups.items() if s not in order]
        lines.append("Tasks — " + " | ".join(parts))
    if session_id:
        lines += _agent_lines(conn, session_id)
    files = conn.execute(
        "SELECT path, edits FROM mem_files ORDER BY edits DESC, last_entry_id DESC LIMIT 8"
    ).fetchall()
    if files:
        lines.append("Most edited files: " + ", ".join(f"{clip(p, 80)} ({n})" for p, n in files))
    open_failures = [f for f in memory.failures if not f.resolved]
    if memory.failures:
        calls = sum(f.count for f in memory.failures)
        line = (
            f"Distinct failures remembered: {len(memory.failures)} (from {calls} failed calls),"
            f" unresolved: {len(open_failures)}"
        )
        if open_failures:
            line += f"; latest unresolved: {clip(open_failures[0].description, 200)}"
        lines.append(line + ".")
    # Recorded text is quoted as recorded, never told as ctxd's own words.
    if mine[2]:
        lines.append(f"The agent's last message, as recorded: {quoted(mine[2], 1500)}")
    if mine[3]:
        lines.append(f"Claude Code's compaction summary, as recorded: {quoted(mine[3], 3000)}")
    return [neutralize(line)[0] for line in lines]


def _feature_lines(memory: Memory) -> list[str]:
    done, running, failed = [], [], []
    for f in memory.features:
        label = f"{f.id} ({clip(f.name, 60)})" if f.name else f.id
        status = f.status.lower()
        if f.completedAt and status in ("failed", "failing", "failure", "error", "blocked"):
            failed.append(label)
        elif f.completedAt:
            done.append(label)
        else:
            running.append(label)
    parts = [
        f"{name}: {_join(items)}"
        for name, items in (("in progress", running), ("done", done), ("failed", failed))
        if items
    ]
    return ["Features — " + " | ".join(parts)] if parts else []


def _agent_lines(conn: sqlite3.Connection, session_id: str) -> list[str]:
    total, completed = query.agent_counts(conn, session_id)
    if not total:
        return []
    recent = [(t, d, s) for _, t, s, d in query.recent_agents(conn, session_id, 5)]
    shown = [f'{t or "agent"} "{clip(d, 60)}" ({s})' if d else f"{t} ({s})" for t, d, s in recent]
    return [f"Agents: {total} started, {completed} completed — recent: {'; '.join(shown)}."]


def render_summary(lines: list[str], max_tokens: int, counter: TokenCounter) -> str:
    """The lines packed into `max_tokens` and 10,000 characters (the last line may be cut)."""
    return clamp("\n".join(lines), max_tokens, counter)


def _material(summary: str, memory: Memory) -> str:
    parts = [summary, "", "Decisions:"]
    parts += [f"- {d.decision}" for d in memory.decisions]
    parts += ["", "Failures:"]
    parts += [f"- {f.description} -> {f.prevention or 'unresolved'}" for f in memory.failures]
    parts += ["", "Constraints:"] + [f"- {c.description}" for c in memory.constraints]
    return "\n".join(parts)


def _bounded(
    items: list[dict[str, Any]], max_tokens: int, counter: TokenCounter
) -> tuple[list[dict[str, Any]], int]:
    # Lowest-ranked items go first until the list's JSON fits the file budget.
    while True:
        tokens = counter.count(json.dumps(items, ensure_ascii=False))
        if tokens <= max_tokens or not items:
            return items, tokens if items else 0
        items = items[:-1]


def publish(
    conn: sqlite3.Connection,
    paths: StatePaths,
    memory: Memory,
    cfg: SummarizerConfig,
    counter: TokenCounter,
    *,
    trigger: str,
    backend: SummaryBackend | None = None,
) -> Published:
    """Write the four context files: running-summary, key-decisions, failure-memory, constraints."""
    extractive = render_summary(summary_lines(conn, memory), cfg.summary_max_tokens, counter)
    summary, used = extractive, "extractive"
    if backend is not None and extractive:
        answer = backend.summarize(_material(extractive, memory), cfg.summary_max_tokens)
        if answer:
            summary, used = clamp(answer, cfg.summary_max_tokens, counter), "command"
    now = iso_utc(time.time_ns())
    common = {"version": FORMAT_VERSION, "watermark": memory.watermark, "updatedAt": now}
    summary_tokens = counter.count(summary)
    _write(
        paths,
        paths.context / SUMMARY_FILE,
        {
            **common,
            "summary": summary,
            "tokenCount": summary_tokens,
            "maxTokens": cfg.summary_max_tokens,
            "backend": used,
            "trigger": trigger,
            "sessionId": history.get_meta(conn, "mem.last_session", ""),
        },
    )
    limit = cfg.context_file_max_tokens
    decisions, d_tokens = _bounded(
        [
            {
                "id": d.id,
                "decision": d.decision,
                "featureId": d.featureId,
                "source": d.source,
                "count": d.count,
                "score": round(d.score, 6),
                "firstSeen": _iso(d.first_ns),
                "lastSeen": _iso(d.last_ns),
                "sessionId": d.session_id,
                "agentId": d.agent_id,
            }
            for d in memory.decisions
        ],
        limit,
        counter,
    )
    _write(
        paths,
        paths.context / DECISIONS_FILE,
        {**common, "tokenCount": d_tokens, "decisions": decisions},
    )
    failures, f_tokens = _bounded(
        [
            {
                "signature": f.signature,
                "description": f.description,
                "prevention": f.prevention,
                "resolved": f.resolved,
                "count": f.count,
                "tool": f.tool,
                "command": f.command,
                "errorClass": f.error_class,
                "lastError": f.last_error,
                "featureId": f.featureId,
                "firstSeen": _iso(f.first_ns),
                "lastSeen": _iso(f.last_ns),
                "resolvedAt": _iso(f.resolved_ns) if f.resolved else "",
                "score": round(f.score, 6),
            }
            for f in memory.failures
        ],
        limit,
        counter,
    )
    failures_doc = {**common, "tokenCount": f_tokens, "failures": failures}
    _write(paths, paths.context / FAILURES_FILE, failures_doc)
    constraints, c_tokens = _bounded(
        [
            {
                "id": c.id,
                "description": c.description,
                "source": c.source,
                "featureId": c.featureId,
                "createdAt": _iso(c.created_ns),
                "sessionId": c.session_id,
            }
            for c in memory.constraints
        ],
        limit,
        counter,
    )
    _write(
        paths,
        paths.context / CONSTRAINTS_FILE,
        {
            **common,
            "tokenCount": c_tokens,
            "constraints": constraints,
        },
    )
    return Published(summary, summary_tokens, memory.watermark, used)


def _write(paths: StatePaths, path: Path, data: dict[str, Any]) -> None:
    data_bytes = (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode()
    write_atomic(path, data_bytes, root=paths.root)


def read_summary(paths: StatePaths) -> dict[str, Any]:
    """running-summary.json as a dict ({} when missing or unreadable)."""
    try:
        data = json.loads((paths.context / SUMMARY_FILE).read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
