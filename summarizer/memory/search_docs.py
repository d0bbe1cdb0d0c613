"""Memory rows as search documents: what of a decision, constraint or failure is searchable."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from indexer import MemoryDoc, failure_body
from summarizer.memory.tables import ConstraintRow, DecisionRow, FailureRow


def memory_docs(rows: Iterable[Any]) -> list[MemoryDoc]:
    """The search documents of memory rows (other row types are skipped)."""
    docs: list[MemoryDoc] = []
    for r in rows:
        if isinstance(r, DecisionRow):
            docs.append(
                MemoryDoc("decision", r.id, r.session_id, r.agent_id, r.last_ns, r.decision)
            )
        elif isinstance(r, ConstraintRow):
            docs.append(MemoryDoc("constraint", r.id, r.session_id, "", r.last_ns, r.description))
        elif isinstance(r, FailureRow):
            body = failure_body(r.description, r.command, r.last_error, r.prevention)
            docs.append(
                MemoryDoc("failure", r.signature, r.session_id, r.agent_id, r.last_ns, body)
            )
    return docs
