"""The memory items changed since a watermark, for a consumer that copies them (the team store)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from summarizer.memory.store import has_memory, watermark

__all__ = ["MemoryChanges", "MemoryItem", "all_keys", "changed_since", "watermark"]


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """A decision, constraint or failure as the memory holds it now (already redacted: it
    is built from stored entries)."""

    kind: str  # decision | constraint | failure
    key: str
    session_id: str
    agent_id: str
    summary: str  # the decision, the rule, or what failed
    command: str
    error: str
    prevention: str
    source: str
    feature_id: str
    count: int
    first_ns: int
    last_ns: int
    active: bool  # a constraint in force, an unresolved failure; decisions: True
    resolved_ns: int


@dataclass(frozen=True, slots=True)
class MemoryChanges:
    """What changed after a watermark, up to the memory's watermark now."""

    items: list[MemoryItem]
    active_constraints: list[str]  # every constraint in force now (revocations show here)
    watermark: int


def changed_since(conn: sqlite3.Connection, after: int) -> MemoryChanges:
    """Every item first seen, restated, resolved or re-opened in entries after `after`.

    A revoked constraint keeps its last entry id, so revocations are given as the list of
    the constraints in force instead.
    """
    mark = watermark(conn)
    if not has_memory(conn):
        return MemoryChanges([], [], mark)
    items = [
        MemoryItem("decision", r[0], r[1], r[2], r[3], "", "", "", r[4], r[5], r[6], r[7], r[8],
                   True, 0)
        for r in conn.execute(
            "SELECT id, session_id, agent_id, decision, sources, feature_id, count, first_ns,"
            " last_ns FROM mem_decisions WHERE last_entry_id>?",
            (after,),
        )
    ]  # fmt: skip
    items += [
        MemoryItem("failure", r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10],
                   r[11], r[12] < r[13], r[14])
        for r in conn.execute(
            "SELECT signature, session_id, agent_id, description, command, last_error,"
            " prevention, sources, feature_id, count, first_ns, last_ns, resolved_entry_id,"
            " last_entry_id, resolved_ns FROM mem_failures"
            " WHERE last_entry_id>? OR resolved_entry_id>?",
            (after, after),
        )
    ]  # fmt: skip
    items += [
        MemoryItem("constraint", r[0], r[1], "", r[2], "", "", "", r[3], r[4], 1, r[5], r[6],
                   bool(r[7]), r[8])
        for r in conn.execute(
            "SELECT id, session_id, description, source, feature_id, created_ns, last_ns,"
            " active, revoked_ns FROM mem_constraints WHERE last_entry_id>?",
            (after,),
        )
    ]  # fmt: skip
    active = [str(r[0]) for r in conn.execute("SELECT id FROM mem_constraints WHERE active=1")]
    return MemoryChanges(items, active, mark)


def all_keys(conn: sqlite3.Connection) -> list[str]:
    """Every item the memory holds, as `kind:key` (what a copy must hold, nothing more)."""
    if not has_memory(conn):
        return []
    keys = [f"decision:{r[0]}" for r in conn.execute("SELECT id FROM mem_decisions")]
    keys += [f"failure:{r[0]}" for r in conn.execute("SELECT signature FROM mem_failures")]
    keys += [f"constraint:{r[0]}" for r in conn.execute("SELECT id FROM mem_constraints")]
    return keys
