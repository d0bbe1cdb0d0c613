"""Injections already computed for the current memory, so `ctxd inject` answers without tiktoken.

The orchestrator calls `ctxd inject` before every subagent; recomputing needs tiktoken (~200 ms
to load) although the answer only changes when the memory does. An injection is a pure function
of the published memory (its ranking does not depend on the clock: see summarizer.memory.rank), the
config file and the flags, so it is kept in `context/injection-cache.json` under those. A cached
answer is used only while the index covers every complete spool line and the context files
cover every indexed entry; otherwise the caller catches up and computes (I12).

Standard library only (plus sqlite3 and indexer.queries.readonly): this is the fast path.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from indexer import StatePaths, connect_readonly, index_is_current, query, write_atomic

__all__ = [
    "CACHE_FILE",
    "TOP_DECISIONS",
    "TOP_FAILURES",
    "cache_key",
    "cached_injection",
    "current_watermark",
    "decision_line",
    "empty_injection",
    "more_constraints_line",
    "remember_injection",
    "render_injection",
]

CACHE_FILE = "injection-cache.json"
FORMAT_VERSION = 1
MAX_ENTRIES = 16  # flag combinations kept per watermark (feature ids, budgets)
TOP_DECISIONS = 3
TOP_FAILURES = 2
_HEAD = "\n\n## Project Context\n\n"


def empty_injection(error: str | None = None) -> dict[str, Any]:
    """The injection with nothing in it (`tokenCount` 0: the orchestrator injects nothing)."""
    result: dict[str, Any] = {
        "summary": "",
        "decisions": [],
        "failures": [],
        "constraints": [],
        "tokenCount": 0,
    }
    if error is not None:
        result["error"] = error
    return result


def render_injection(injection: dict[str, Any]) -> str:
    """The text seed 004's `inject_context()` appends to a prompt for this injection."""
    text = _HEAD + f"**Summary:**\n{injection['summary']}\n\n"
    if injection["decisions"]:
        text += "**Key Decisions:**\n"
        for d in injection["decisions"][:TOP_DECISIONS]:
            text += decision_line(d) + "\n"
        text += "\n"
    if injection["failures"]:
        text += "**Recent Failures to Avoid:**\n"
        for f in injection["failures"][:TOP_FAILURES]:
            text += f"- {f['description']}: {f['prevention']}\n"
        text += "\n"
    more = int(injection.get("moreConstraints") or 0)
    if injection["constraints"] or more:
        text += "**Active Constraints:**\n"
        for c in injection["constraints"]:
            text += f"- {c['description']}\n"
        if more:
            text += more_constraints_line(more) + "\n"
        text += "\n"
    return text


def more_constraints_line(more: int) -> str:
    """What packing left out, and where to read it: a constraint is never dropped silently."""
    return (
        f"- … and {more} more constraint{'s' if more > 1 else ''} in force, left out for room"
        " (the ctxd MCP tool `decisions` lists them all)"
    )


def decision_line(d: dict[str, Any]) -> str:
    """One decision as a line: "(Feature n/a)" after every decision is noise, so the feature is
    named only when there is one."""
    feature = d.get("featureId") or "n/a"
    return f"- {d['decision']}" + ("" if feature == "n/a" else f" (Feature {feature})")


def cache_key(config_bytes: bytes, feature_id: str | None, budget: int | None) -> str:
    """The key of one injection: the exact config file, the feature and the budget flag."""
    h = hashlib.sha256(config_bytes)
    h.update(json.dumps([feature_id, budget]).encode())
    return h.hexdigest()


def read_config_bytes(paths: StatePaths) -> bytes:
    """The config file as it is now (b"" when absent: the defaults)."""
    try:
        return paths.config.read_bytes()
    except FileNotFoundError:
        return b""


def current_watermark(paths: StatePaths) -> int | None:
    """The memory's published watermark when nothing needs recomputing, else None.

    Nothing needs recomputing when every complete spool line is indexed and the published
    context files cover every indexed entry.
    """
    conn = connect_readonly(paths.index_db)
    if conn is None:
        return None
    try:
        if not index_is_current(conn, paths.spool):
            return None
        return query.published_if_level(conn)
    finally:
        conn.close()


def cached_injection(paths: StatePaths, key: str, watermark: int) -> dict[str, Any] | None:
    """The injection kept under `key` for `watermark`, if there is one."""
    doc = _read(paths)
    if doc.get("watermark") != watermark:
        return None
    found = doc.get("entries", {}).get(key)
    return found if isinstance(found, dict) else None


def remember_injection(
    paths: StatePaths, key: str, watermark: int, injection: dict[str, Any]
) -> None:
    """Keep `injection` under `key` (a cache: a lost race only costs a recomputation)."""
    if "error" in injection or not paths.context.is_dir():
        return
    doc = _read(paths)
    entries: dict[str, Any] = doc.get("entries", {}) if doc.get("watermark") == watermark else {}
    entries.pop(key, None)
    entries[key] = injection
    while len(entries) > MAX_ENTRIES:
        entries.pop(next(iter(entries)))
    data = {"version": FORMAT_VERSION, "watermark": watermark, "entries": entries}
    text = json.dumps(data, ensure_ascii=False)
    write_atomic(paths.context / CACHE_FILE, text.encode(), root=paths.root)


def _read(paths: StatePaths) -> dict[str, Any]:
    try:
        fd = os.open(paths.context / CACHE_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        with os.fdopen(fd, "rb") as f:
            doc = json.loads(f.read())
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict) or doc.get("version") != FORMAT_VERSION:
        return {}
    if not isinstance(doc.get("entries"), dict):
        return {}
    return doc
