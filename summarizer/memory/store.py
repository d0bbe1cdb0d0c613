"""Memory tables in the index: their schema, and incremental compaction from a watermark."""

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
from summarizer.memory.extract import Observation, observe
from summarizer.memory.merge import MemoryFold
from summarizer.memory.rank import rank_config, rank_key, source_weight
from summarizer.memory.tables import (
    SCHEMA,
    add_missing_columns,
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


def summarizer_config_of(config: Config | SummarizerConfig | None) -> SummarizerConfig:
    """The `[summarizer]` settings of a config (the defaults for None)."""
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
    cfg = summarizer_config_of(config)
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
