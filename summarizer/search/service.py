"""Search the index: a current read-only connection, filters, and hits ready to print."""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from indexer import (
    CtxdError,
    StatePaths,
    is_valid_session_id,
    is_valid_view_name,
    search_connections,
    search_index,
    search_query,
    unwritable_reason,
)
from summarizer.search.query import SearchQueryError, parse_since, to_match

__all__ = ["Filters", "SearchHit", "current_connection", "search", "validate"]

KINDS = search_index.KINDS
MAX_LIMIT = 100
DEFAULT_LIMIT = 10
# Recency halves a document's boost every week; bm25 picks this many candidates to re-rank.
HALF_LIFE_H = 168.0
CANDIDATES = 200


@dataclass(frozen=True)
class Filters:
    """What `ctxd search` and the MCP `search` tool may narrow a search by."""

    session: str | None = None
    agent: str | None = None
    kinds: tuple[str, ...] = ()
    since: str | None = None
    limit: int = DEFAULT_LIMIT


@dataclass(frozen=True)
class SearchHit:
    """One hit: where it comes from, when (ISO-8601 UTC) and a snippet with the match marked."""

    kind: str
    session_id: str
    agent_id: str
    time: str
    snippet: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def search(
    conn: sqlite3.Connection,
    text: str,
    filters: Filters,
    *,
    now_ns: int | None = None,
    mark: tuple[str, str] = ("**", "**"),
    redact: Callable[[str], str] | None = None,
) -> list[SearchHit]:
    """The best hits for `text`, newest first among equals. Raises SearchQueryError.

    With `redact`, a hit whose stored text it changes (an index an earlier ctxd wrote, before
    a rule existed) gets its snippet cut from the redacted text instead: a snippet is a window
    that can cut the context a rule needs (`password` in `**password** hunter2`)."""
    match = validate(text, filters)
    since_ns = parse_since(filters.since) if filters.since else None
    try:
        hits = search_query.query(
            conn,
            match,
            now_ns=now_ns if now_ns is not None else time.time_ns(),
            half_life_h=HALF_LIFE_H,
            limit=filters.limit,
            candidates=max(CANDIDATES, filters.limit),
            session_prefix=filters.session,
            agent_id=filters.agent.lower() if filters.agent else None,
            kinds=filters.kinds,
            since_ns=since_ns,
            mark=mark,
        )
    except sqlite3.OperationalError as e:  # the quoting above should make this unreachable
        raise SearchQueryError(f"cannot search for {text!r}: {e}") from e
    snippets = {h.doc: h.snippet for h in hits}
    if redact is not None and hits:
        for doc, body in search_query.stored_bodies(conn, list(snippets)).items():
            if (redacted := redact(body)) != body:
                snippets[doc] = _snippet(redacted, text, mark)
    return [
        SearchHit(
            h.kind, h.session_id, h.agent_id, iso_utc(h.ts_ns), snippets[h.doc], round(h.score, 3)
        )
        for h in hits
    ]


def _snippet(body: str, text: str, mark: tuple[str, str], width: int = 16) -> str:
    """About `width` words of body around the first word of the query, marked (as FTS5 does)."""
    words = body.split()
    wanted = [w.lower().rstrip("*") for w in re.findall(r"[\w*]+", text)]
    found = next((i for i, w in enumerate(words) if any(q and q in w.lower() for q in wanted)), -1)
    at = max(found, 0)
    start = max(0, at - width // 2)
    shown = words[start : start + width]
    if found >= 0:
        shown[at - start] = f"{mark[0]}{shown[at - start]}{mark[1]}"
    return ("…" if start else "") + " ".join(shown) + ("…" if start + width < len(words) else "")


def validate(text: str, filters: Filters) -> str:
    """The FTS5 expression of `text` once it and the filters are usable; else SearchQueryError."""
    if not 1 <= filters.limit <= MAX_LIMIT:
        raise SearchQueryError(f"--limit must be between 1 and {MAX_LIMIT}")
    for kind in filters.kinds:
        if kind not in KINDS:
            raise SearchQueryError(f"unknown kind {kind!r}; use one of {', '.join(KINDS)}")
    if filters.session is not None and not (
        filters.session and is_valid_session_id(filters.session)
    ):
        raise SearchQueryError("invalid session id (give the id or a prefix of it)")
    if filters.agent is not None and not is_valid_view_name(filters.agent.lower()):
        raise SearchQueryError(
            "invalid agent id (letters, digits, '-' and '_'; 'main' is the orchestrator)"
        )
    if filters.since:
        parse_since(filters.since)
    return to_match(text)


def iso_utc(ts_ns: int) -> str:
    """`ts_ns` as ISO-8601 UTC to the second (`2026-11-25T14:19:30Z`)."""
    return datetime.fromtimestamp(ts_ns / 1e9, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def current_connection(
    paths: StatePaths, on_read_only: Callable[[str], None] | None = None
) -> sqlite3.Connection | None:
    """A read-only connection to an index whose entries and memory cover the spool.

    None when there is no state at all (a read command creates none). The fast path only
    checks; when something is new, the index and the memory are brought up to date first,
    unless the state dir cannot be written: then the index is read as it is, and
    `on_read_only` is told why.
    """
    if not paths.root.is_dir():
        return None
    conn = search_connections.open_current(paths.index_db, paths.spool)
    if conn is not None:
        return conn
    read_only = unwritable_reason(paths.root)
    if read_only:
        if on_read_only is not None:
            on_read_only(read_only)
        return search_connections.open_readonly(paths.index_db)
    from indexer import load_config  # only now: the catch-up loads msgspec and more
    from summarizer.memory.compact import compact_now
    from summarizer.resume.writer import refresh_after_compaction

    compact_now(
        paths, load_config(paths.config), trigger="search", after=[refresh_after_compaction]
    )
    conn = search_connections.open_readonly(paths.index_db)
    if conn is not None and not search_index.has_search(conn):
        conn.close()
        raise CtxdError(
            "the running daemon predates search: restart it (`ctxd stop`, then `ctxd start`)"
        )
    return conn
