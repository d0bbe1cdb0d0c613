"""Memory tables in the index: incremental compaction from a watermark, and `load_memory()`."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from indexer import Config, SummarizerConfig, history
from summarizer.common.models import Constraint, Decision, Failure, Feature, Memory
from summarizer.memory.extract import Observation, observe
from summarizer.memory.merge import MemoryFold
from summarizer.memory.rank import rank_config, rank_key, score, source_weight
from summarizer.memory.tables import (
    SCHEMA,
    TABLES,
    ConstraintRow,
    DecisionRow,
    FailureRow,
    add_missing_columns,
    has_column,
    select_list,
)

log = logging.getLogger("ctxd.memory")

# Entries folded per transaction: a batch is held in memory whole (texts up to max_text_chars),
# so it stays small enough to keep the daemon's peak RSS bounded.
BATCH_ENTRIES = 2_000
# The memory tables' layout (tables.ADDED_COLUMNS): a writer migrates an older one.
SCHEMA_VERSION = "3"


@dataclass
class CompactStats:
    """What one `compact()` call did."""

    entries: int = 0
    batches: int = 0
    skipped: int = 0
    new_decisions: int = 0
    new_failures: int = 0
    watermark: int = 0
    seconds: float = 0.0


def _summarizer_config(config: Config | SummarizerConfig | None) -> SummarizerConfig:
    if config is None:
        return SummarizerConfig()
    return config.summarizer if isinstance(config, Config) else config


def has_memory(conn: sqlite3.Connection) -> bool:
    """True once the memory tables exist (a first compaction created them)."""
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='mem_decisions'"
    ).fetchone()
    return row is not None


def ensure_schema(conn: sqlite3.Connection, cfg: SummarizerConfig) -> None:
    """Create or migrate the memory tables; re-rank stored items if the ranking config changed."""
    fingerprint = rank_config(cfg)
    if (
        has_memory(conn)
        and history.get_meta(conn, "mem.rank_config") == fingerprint
        and history.get_meta(conn, "mem.schema") == SCHEMA_VERSION
    ):
        return
    with history.transaction(conn):
        for statement in SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        add_missing_columns(conn)
        history.set_meta(conn, "mem.schema", SCHEMA_VERSION)
        if history.get_meta(conn, "mem.rank_config") != fingerprint:
            _rerank(conn, cfg)
            history.set_meta(conn, "mem.rank_config", fingerprint)


def _rerank(conn: sqlite3.Connection, cfg: SummarizerConfig) -> None:
    # One pass over every stored item, only when the half-life or a weight changed.
    for table, key in (("mem_decisions", "id"), ("mem_failures", "signature")):
        rows = conn.execute(f"SELECT {key}, last_ns, count, sources FROM {table}").fetchall()
        conn.executemany(
            f"UPDATE {table} SET rank_key=? WHERE {key}=?",
            [
                (rank_key(last, n, source_weight(src.split(","), cfg), cfg.recency_half_life_h), k)
                for k, last, n, src in rows
            ],
        )


def watermark(conn: sqlite3.Connection) -> int:
    """The last entry id the memory covers (0 before the first compaction)."""
    return int(history.get_meta(conn, "mem.watermark", "0") or 0)


def compact(
    conn: sqlite3.Connection,
    config: Config | SummarizerConfig | None = None,
    *,
    batch_entries: int = BATCH_ENTRIES,
    max_entries: int | None = None,
    lock: AbstractContextManager[Any] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> CompactStats:
    """Fold the entries after the watermark into the memory tables, one batch per transaction.

    Only entries after the watermark are read, so the cost grows with new events. `lock` (the
    daemon's index lock, I8) is held around each batch's write transaction only: the batch is
    read and extracted before it; `max_entries` stops early (compacting in several runs gives
    the same memory as one run).
    """
    cfg = _summarizer_config(config)
    started = time.perf_counter()
    with lock if lock is not None else contextlib.nullcontext():
        ensure_schema(conn, cfg)  # it writes on a first run or a new ranking config
    stats = CompactStats(watermark=watermark(conn))
    while max_entries is None or stats.entries < max_entries:
        if should_stop is not None and should_stop():
            break
        limit = (
            batch_entries
            if max_entries is None
            else min(batch_entries, max_entries - stats.entries)
        )
        # Reading and extracting (most of a batch's time) happen outside the lock, on this
        # connection's own snapshot; only the fold, which writes, holds it.
        start = watermark(conn)
        batch = history.entries_after(conn, start, limit)
        if not batch:
            break
        observed = _observe(batch)
        with lock if lock is not None else contextlib.nullcontext(), history.transaction(conn):
            if watermark(conn) != start or history.entry_span(conn, start, batch[-1].id) != (
                len(batch),
                batch[-1].id,
            ):  # entries deleted meanwhile (retention): the batch is read again, in the lock
                batch = history.entries_after(conn, watermark(conn), limit)
                if not batch:
                    break
                observed = _observe(batch)
            fold = MemoryFold(conn, cfg)
            for stored, observations in zip(batch, observed, strict=True):
                fold.note_entry(stored.entry.session_id, stored.entry.hook_event)
                if observations is None:
                    stats.skipped += 1
                    continue
                for o in observations:
                    fold.apply(o)
            fold.flush(batch[-1].id)
        stats.entries += len(batch)
        stats.batches += 1
        stats.new_decisions += fold.new_decisions
        stats.new_failures += fold.new_failures
        stats.watermark = batch[-1].id
    stats.seconds = time.perf_counter() - started
    return stats


def _observe(batch: list[history.StoredEntry]) -> list[list[Observation] | None]:
    """Each entry's observations; None for an entry the extraction fails on (it is skipped)."""
    observed: list[list[Observation] | None] = []
    for stored in batch:
        try:
            observed.append(observe(stored.id, stored.entry))
        except Exception:  # one odd entry must not stop the memory for good
            log.exception("cannot extract from entry %d; skipped", stored.id)
            observed.append(None)
    return observed


# --- reading -------------------------------------------------------------------------------


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
    cfg = _summarizer_config(config)
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
    cfg = _summarizer_config(config)
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


def drop_orphan_terms(conn: sqlite3.Connection) -> None:
    """Delete the terms of constraints and decisions that are gone (after `ctxd forget`)."""
    if has_memory(conn):
        conn.execute(
            "DELETE FROM mem_constraint_terms WHERE id NOT IN (SELECT id FROM mem_constraints)"
        )
        if conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='mem_decision_terms'"
        ).fetchone():
            conn.execute(
                "DELETE FROM mem_decision_terms WHERE id NOT IN (SELECT id FROM mem_decisions)"
            )
