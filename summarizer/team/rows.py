"""Local rows as team rows: the columns each team table takes, and the mapping (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from indexer import AGENT_COLUMNS, ENTRY_COLUMNS, ENTRY_KINDS, SESSION_COLUMNS
from summarizer.memory.changes import MemoryItem
from summarizer.team.identity import Identity

__all__ = [
    "AGENT_TEAM_COLUMNS",
    "ENTRY_TEAM_COLUMNS",
    "MEMORY_TEAM_COLUMNS",
    "SESSION_TEAM_COLUMNS",
    "agent_rows",
    "entry_rows",
    "memory_rows",
    "session_rows",
]

_WHO = ("machine_id", "project", "user_name")
# Local entry columns, with `id` as `entry_id` and the search kind added (local search's
# kinds: an event no search kind covers gets "" and no search vector).
ENTRY_TEAM_COLUMNS = (*_WHO, "entry_id", *ENTRY_COLUMNS[1:], "kind")
SESSION_TEAM_COLUMNS = (*_WHO, *SESSION_COLUMNS)
AGENT_TEAM_COLUMNS = (*_WHO, *AGENT_COLUMNS)
MEMORY_TEAM_COLUMNS = (
    *_WHO,
    "kind",
    "item_key",
    "session_id",
    "agent_id",
    "summary",
    "command",
    "error",
    "prevention",
    "source",
    "feature_id",
    "count",
    "first_ns",
    "last_ns",
    "active",
    "resolved_ns",
)
_EVENT = ENTRY_COLUMNS.index("event")

Row = tuple[object, ...]


def entry_rows(who: Identity, rows: Iterable[Sequence[object]]) -> list[Row]:
    """`indexer.queries.changes.entry_rows_after` rows as `ENTRY_TEAM_COLUMNS` tuples."""
    head = (who.machine_id, who.project, who.user)
    return [(*head, *row, ENTRY_KINDS.get(str(row[_EVENT]), "")) for row in rows]


def session_rows(who: Identity, rows: Iterable[Sequence[object]]) -> list[Row]:
    """Session catalog rows as `SESSION_TEAM_COLUMNS` tuples."""
    head = (who.machine_id, who.project, who.user)
    return [(*head, *row) for row in rows]


def agent_rows(who: Identity, rows: Iterable[Sequence[object]]) -> list[Row]:
    """Agent rows as `AGENT_TEAM_COLUMNS` tuples."""
    head = (who.machine_id, who.project, who.user)
    return [(*head, *row) for row in rows]


def memory_rows(who: Identity, items: Iterable[MemoryItem]) -> list[Row]:
    """Memory items as `MEMORY_TEAM_COLUMNS` tuples."""
    head = (who.machine_id, who.project, who.user)
    return [
        (
            *head,
            i.kind,
            i.key,
            i.session_id,
            i.agent_id,
            i.summary,
            i.command,
            i.error,
            i.prevention,
            i.source,
            i.feature_id,
            i.count,
            i.first_ns,
            i.last_ns,
            i.active,
            i.resolved_ns,
        )
        for i in items
    ]
