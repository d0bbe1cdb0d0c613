"""Reading the memory tables: the ranked memory (`load_memory()`), a session's failures, counts."""

from __future__ import annotations

import sqlite3
from typing import Any

from indexer import Config, SummarizerConfig, history
from summarizer.common.models import Constraint, Decision, Failure, Feature, Memory
from summarizer.memory.rank import score, source_weight
from summarizer.memory.store import has_memory, summarizer_config_of, watermark
from summarizer.memory.tables import (
    TABLES,
    ConstraintRow,
    DecisionRow,
    FailureRow,
    has_column,
    select_list,
)

__all__ = ["count_new", "load_memory", "session_failures"]


def _select(
    conn: sqlite3.Connection, table: str, where: str, order: str, args: tuple[Any, ...]
) -> list[Any]:
    row_type, _pk = TABLES[table]
    sql = f"SELECT {select_list(conn, row_type, table)} FROM {table} {where} ORDER BY {order}"
    return [row_type(*r) for r in conn.execute(sql, args)]


def _ranked(conn: sqlite3.Connection, table: str, limit: int, feature_id: str | None) -> list[Any]:
    # Equal ranks (statements of one message) keep the order they were stated in.
    order = "rank_key DESC, last_entry_id DESC, rowid LIMIT ?"
    # Retired decisions leave the notes (they stay in the index, searchable).
    in_force = "retired_ns=0" if has_column(conn, table, "retired_ns") else "1"
    rows = _select(conn, table, f"WHERE {in_force}", order, (limit,))
    if feature_id:
        mine = _select(
            conn, table, f"WHERE feature_id=? AND {in_force}", order, (feature_id, limit)
        )
        keys = {getattr(r, TABLES[table][1]) for r in mine}
        rows = mine + [r for r in rows if getattr(r, TABLES[table][1]) not in keys]
    return rows[:limit]


def load_memory(
    conn: sqlite3.Connection,
    config: Config | SummarizerConfig | None = None,
    *,
    feature_id: str | None = None,
) -> Memory:
    """The top decisions and failures, the active constraints and the features, ranked.

    With `feature_id`, that feature's items come first. Reads a bounded number of rows
    through indexes, so it costs the same on a large index as on a small one.
    """
    cfg = summarizer_config_of(config)
    if not has_memory(conn):
        return Memory()
    ref = int(history.get_meta(conn, "mem.last_ns", "0") or 0)
    hl = cfg.recency_half_life_h
    decisions = [
        Decision(
            id=r.id,
            decision=r.decision,
            featureId=r.feature_id,
            source=r.sources,
            session_id=r.session_id,
            agent_id=r.agent_id,
            first_ns=r.first_ns,
            last_ns=r.last_ns,
            count=r.count,
            entry_id=r.entry_id,
            score=score(r.last_ns, r.count, source_weight(r.sources.split(","), cfg), ref, hl),
        )
        for r in _ranked(conn, "mem_decisions", cfg.max_decisions, feature_id)
        if isinstance(r, DecisionRow)
    ]
    failures = [
        _failure_of(r, cfg, ref)
        for r in _ranked(conn, "mem_failures", cfg.max_failures, feature_id)
        if isinstance(r, FailureRow)
    ]
    active = _select(
        conn,
        "mem_constraints",
        "WHERE active=1",
        "last_entry_id DESC LIMIT ?",
        (max(cfg.max_constraints * 4, 100),),
    )
    # Explicit rules first, then the most recently stated; a given feature's rules before both.
    active.sort(
        key=lambda r: (bool(feature_id) and r.feature_id != feature_id, r.source != "explicit")
    )
    constraints = [
        Constraint(
            id=r.id,
            description=r.description,
            source=r.source,
            featureId=r.feature_id,
            session_id=r.session_id,
            active=True,
            created_ns=r.created_ns,
        )
        for r in active[: cfg.max_constraints]
        if isinstance(r, ConstraintRow)
    ]
    features = [
        Feature(
            id=str(r[0]),
            name=str(r[1]),
            category=str(r[2]),
            status=str(r[3]),
            startedAt=int(r[4]),
            completedAt=int(r[5]),
        )
        for r in conn.execute(
            "SELECT id, name, category, status, started_at, completed_at FROM mem_features"
            " ORDER BY last_entry_id DESC LIMIT 50"
        )
    ]
    (in_force,) = conn.execute("SELECT count(*) FROM mem_constraints WHERE active=1").fetchone()
    return Memory(decisions, failures, constraints, features, watermark(conn), int(in_force))


def session_failures(
    conn: sqlite3.Connection,
    session_id: str,
    config: Config | SummarizerConfig | None = None,
    limit: int = 200,
) -> list[Failure]:
    """One session's failures (those it saw last), unresolved first, newest first."""
    if not has_memory(conn):
        return []
    cfg = summarizer_config_of(config)
    ref = int(history.get_meta(conn, "mem.last_ns", "0") or 0)
    rows = _select(
        conn,
        "mem_failures",
        "WHERE session_id=?",
        "resolved_entry_id < last_entry_id DESC, last_ns DESC LIMIT ?",
        (session_id, limit),
    )
    return [_failure_of(r, cfg, ref) for r in rows if isinstance(r, FailureRow)]


def _failure_of(r: FailureRow, cfg: SummarizerConfig, ref: int) -> Failure:
    weight = source_weight(r.sources.split(","), cfg)
    return Failure(
        signature=r.signature,
        description=r.description,
        prevention=r.prevention,
        tool=r.tool,
        command=r.command,
        error_class=r.error_class,
        last_error=r.last_error,
        featureId=r.feature_id,
        session_id=r.session_id,
        agent_id=r.agent_id,
        count=r.count,
        first_ns=r.first_ns,
        last_ns=r.last_ns,
        resolved=not r.is_open,
        resolved_ns=r.resolved_ns,
        score=score(r.last_ns, r.count, weight, ref, cfg.recency_half_life_h),
        cascades=r.cascades,
        target=r.target_key,
    )


def count_new(conn: sqlite3.Connection, after_id: int) -> tuple[int, int]:
    """(decisions, failures) first seen in entries after `after_id`."""
    if not has_memory(conn):
        return 0, 0
    d = conn.execute("SELECT count(*) FROM mem_decisions WHERE entry_id>?", (after_id,)).fetchone()
    f = conn.execute("SELECT count(*) FROM mem_failures WHERE entry_id>?", (after_id,)).fetchone()
    return int(d[0]), int(f[0])
