"""Searching the team store: one project's entries and memory items, every machine, ranked.

Search ranks as local search does: the user's words must all match (a token with punctuation
is a phrase, `word*` a prefix), only the most recent matching events are ranked, with every
matching memory item, and a recent hit counts up to twice an old one. PostgreSQL's own rank
(`ts_rank`) stands in for bm25.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from indexer import MEMORY_KINDS
from summarizer.search.query import parse_since, terms
from summarizer.search.service import CANDIDATES, HALF_LIFE_H, Filters, validate
from summarizer.search.service import iso_utc as iso_seconds
from summarizer.team.pg import translate_errors
from summarizer.team.schema import BLOCK

__all__ = ["TeamHit", "search", "snippet", "to_tsquery"]

# The newest matching events that are ranked, with every matching memory item. Local search
# ranks 1,000; here ts_rank reads each candidate's vector from the table, and 300 keeps the
# p95 of a search at 1,000,000 entries near 50 ms on the bench machine (bench/bench_team.py).
WINDOW = 300
_WINDOWS = (1, 2, 4, 8, 16, 32, 64, 128)  # the parts' ends, in blocks back from the newest
# `seq + 0`: ordered by the (project, seq) index, a part would walk the whole project
# backwards, its blocks only a filter; sorted, it reads the index's intersection only.
_NEWEST_FIRST = "ORDER BY seq + 0 DESC LIMIT %s"
_TOKEN = re.compile(r"[^\W_]+")
_SNIPPET_TOKENS = 16
_ENTRY_BODY = (
    "ctxd.entry_body(e.event, e.description, e.instruction, e.output_summary, e.error, e.text,"
    " e.files, e.command)"
)


@dataclass(frozen=True)
class TeamHit:
    """A search hit of the team: local search's fields plus the machine and user."""

    kind: str
    session_id: str
    agent_id: str
    time: str
    snippet: str
    score: float
    machine: str  # the host name the machine reported
    user: str
    machine_id: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def to_tsquery(text: str) -> str:
    """The tsquery text (for `to_tsquery('simple', …)`) of a search: every phrase must
    match, its words in a row, the last word of a `word*` token as a prefix."""
    parts = []
    for words, prefix in terms(text):
        quoted = [f"'{w.lower()}'" for w in words]
        if prefix:
            quoted[-1] += ":*"
        parts.append(" <-> ".join(quoted) if len(quoted) > 1 else quoted[0])
    return " & ".join(parts)


def search(
    conn: Any, project: str, text: str, filters: Filters, *, now_ns: int, mark: tuple[str, str]
) -> list[TeamHit]:
    """The best hits of `project` for `text`, as local search ranks them."""
    validate(text, filters)
    tsquery = to_tsquery(text)
    where, args = _filters(filters, "ts_ns")
    candidates = max(CANDIDATES, filters.limit)
    ranked: list[tuple[Any, ...]] = []
    half_life_ns = HALF_LIFE_H * 3600e9
    with translate_errors("searching the team store"):
        if not filters.kinds or set(filters.kinds) & MEMORY_KINDS:
            kinds = [k for k in filters.kinds if k in MEMORY_KINDS]
            memory_where, memory_args = _filters(filters, "last_ns")
            memory_where += " AND kind = ANY(%s)" if kinds else ""
            ranked += conn.execute(
                "SELECT machine_id, 0, kind, item_key, session_id, agent_id, last_ns,"
                " ts_rank(search, q) FROM ctxd.memory, to_tsquery('simple', %s) q"
                f" WHERE project = %s AND search @@ q{memory_where}"
                " ORDER BY ts_rank(search, q) DESC LIMIT %s",
                [tsquery, project, *memory_args, *([kinds] if kinds else []), candidates],
            ).fetchall()
        if not filters.kinds or not set(filters.kinds) <= MEMORY_KINDS:
            kinds = [k for k in filters.kinds if k not in MEMORY_KINDS]
            entry_where = where + (" AND kind = ANY(%s)" if kinds else "")
            entry_args = [*args, *([kinds] if kinds else [])]
            ranked += _newest_matches(conn, project, tsquery, entry_where, entry_args)

        def score(row: tuple[Any, ...]) -> float:
            age_ns = max(now_ns - int(row[6]), 0)
            return float(row[7]) * (1.0 + 1.0 / (1.0 + age_ns / half_life_ns))

        best = sorted(ranked, key=lambda r: (-score(r), -int(r[6])))[: filters.limit]
        details = _details(conn, best)
    phrases = terms(text)
    hits = []
    for row in best:
        body, user, host = details.get((row[0], row[1], row[2], row[3]), ("", "", ""))
        hits.append(
            TeamHit(
                kind=str(row[2]),
                session_id=str(row[4]),
                agent_id=str(row[5]),
                time=iso_seconds(int(row[6])),
                snippet=snippet(body, phrases, mark),
                score=round(score(row), 3),
                machine=host,
                user=user,
                machine_id=str(row[0]),
            )
        )
    return hits


def _newest_matches(
    conn: Any, project: str, tsquery: str, where: str, args: list[Any]
) -> list[tuple[Any, ...]]:
    """The WINDOW newest matching events (by arrival in the team store), ranked.

    The search index also keys each row by its arrival block (seq / BLOCK): one statement
    asks the newest block, then the next 1, 2, 4 … 64 older ones, then all the rest, each
    part intersecting words and blocks inside the index; the parts are in arrival order and
    the outer LIMIT stops at the first that completes the window, so a common word reads a
    few blocks and a rare one the whole index (few matches either way). A plain "newest
    first" over the words' matches read every match (87,000 rows for a frequent phrase).
    """
    row = conn.execute(
        "SELECT coalesce(max(seq), 0) FROM ctxd.entries WHERE project = %s", (project,)
    ).fetchone()
    top = int(row[0]) // BLOCK
    inner = (
        "SELECT machine_id, entry_id, kind, session_id, agent_id, ts_ns, seq, search"
        f" FROM ctxd.entries WHERE project = %s AND search @@ to_tsquery('simple', %s){where}"
    )
    parts: list[str] = []
    params: list[Any] = [tsquery]
    covered: list[int] = []
    low = -2  # two blocks above the newest: rows that arrive meanwhile
    for high in _WINDOWS:
        blocks = [top - back for back in range(low, high)]
        covered += blocks
        parts.append(f"({inner} AND (seq / {BLOCK}) = ANY(%s::bigint[]) {_NEWEST_FIRST})")
        params += [project, tsquery, *args, blocks, WINDOW]
        low = high
    parts.append(f"({inner} AND NOT (seq / {BLOCK}) = ANY(%s::bigint[]) {_NEWEST_FIRST})")
    params += [project, tsquery, *args, covered, WINDOW, WINDOW]
    sql = (
        "SELECT machine_id, entry_id, kind, '', session_id, agent_id, ts_ns,"
        " ts_rank(search, to_tsquery('simple', %s)) FROM ("
        + " UNION ALL ".join(parts)
        + ") newest LIMIT %s"
    )
    with conn.transaction():
        # A parallel plan may run the parts in any order: the first complete part must win.
        conn.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        # Planned for this query's blocks: a generic plan (psycopg prepares a statement run
        # five times) cannot see which blocks the parts name, and reads every match.
        conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
        return list(conn.execute(sql, params).fetchall())


def _filters(filters: Filters, time_column: str) -> tuple[str, list[Any]]:
    where, args = "", []
    if filters.session:
        where += " AND left(session_id, %s) = %s"
        args += [len(filters.session), filters.session]
    if filters.agent:
        where += " AND agent_id = %s"
        args.append(filters.agent.lower())
    if filters.since:
        where += f" AND {time_column} >= %s"
        args.append(parse_since(filters.since))
    return where, args


def _details(conn: Any, best: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], tuple[str, str, str]]:
    """The searchable text, user and host of the chosen hits only."""
    found: dict[tuple[Any, ...], tuple[str, str, str]] = {}
    entries = [r for r in best if r[3] == ""]
    items = [r for r in best if r[3] != ""]
    if entries:
        for mid, eid, kind, body, user, host in conn.execute(
            f"SELECT e.machine_id, e.entry_id, e.kind, {_ENTRY_BODY}, e.user_name,"
            " coalesce(m.host, '') FROM ctxd.entries e"
            " JOIN unnest(%s::text[], %s::bigint[]) AS k(machine_id, entry_id)"
            " USING (machine_id, entry_id) LEFT JOIN ctxd.machines m USING (machine_id)",
            [[r[0] for r in entries], [r[1] for r in entries]],
        ):
            found[(mid, eid, kind, "")] = (body, user, host)
    if items:
        for mid, kind, key, body, user, host in conn.execute(
            "SELECT i.machine_id, i.kind, i.item_key, concat_ws(' ', nullif(i.summary, ''),"
            " nullif(i.command, ''), nullif(i.error, ''), nullif(i.prevention, '')),"
            " i.user_name, coalesce(m.host, '') FROM ctxd.memory i"
            " JOIN unnest(%s::text[], %s::text[], %s::text[]) AS k(machine_id, kind, item_key)"
            " USING (machine_id, kind, item_key) LEFT JOIN ctxd.machines m USING (machine_id)",
            [[r[0] for r in items], [r[2] for r in items], [r[3] for r in items]],
        ):
            found[(mid, 0, kind, key)] = (body, user, host)
    return found


def snippet(body: str, phrases: list[tuple[list[str], bool]], mark: tuple[str, str]) -> str:
    """About 16 words of `body` around its first match, the words of whole phrase matches
    marked, `…` where cut (as local search's snippets read; pure).

    The body is read only up to the end of the window: a hit's text can be 16,000 characters.
    """
    plans = [([w.lower() for w in words], prefix) for words, prefix in phrases]
    tokens: list[re.Match[str]] = []
    lowered: list[str] = []
    marked: set[int] = set()
    first = -1
    exhausted = True
    for match in _TOKEN.finditer(body):
        if first >= 0 and len(tokens) > first + _SNIPPET_TOKENS:
            exhausted = False
            break
        tokens.append(match)
        word = match.group().lower()
        lowered.append(word)
        end = len(tokens)
        for words, prefix in plans:  # the phrases that end at this word
            begin = end - len(words)
            if begin < 0 or not (word.startswith(words[-1]) if prefix else word == words[-1]):
                continue
            if lowered[begin : end - 1] == words[:-1]:
                marked.update(range(begin, end))
                first = begin if first < 0 else first
    if not tokens:
        return body[:200]
    first = max(first, 0)
    start = max(0, min(first - 2, len(tokens) - _SNIPPET_TOKENS))
    stop = min(len(tokens), start + _SNIPPET_TOKENS)
    out = ["…" if start else ""]
    pos = tokens[start].start()
    for i in range(start, stop):
        t = tokens[i]
        out.append(body[pos : t.start()])
        out.append(f"{mark[0]}{t.group()}{mark[1]}" if i in marked else t.group())
        pos = t.end()
    out.append("…" if stop < len(tokens) or not exhausted else body[pos:].rstrip())
    return "".join(out)
