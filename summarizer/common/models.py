"""msgspec Structs of the summarizer's memory: decisions, failures, constraints, progress.

These are persisted (index tables and `.ctxd/context/*.json`), so the schema-evolution rule
holds: new fields get defaults, existing fields never change type or meaning.
"""

from __future__ import annotations

import msgspec


class Decision(msgspec.Struct, omit_defaults=True):
    """A decision taken in the project (seed 004 `key-decisions.json` item)."""

    id: str  # stable signature of the normalized text
    decision: str
    featureId: str = ""
    # Every source that stated it, comma-separated and sorted: explicit | stop (the agent's
    # own message) | plan (a plan the user approved) | user_prompt; a memory written by an
    # earlier ctxd may also hold agent_output and compact_summary
    source: str = ""
    session_id: str = ""
    agent_id: str = ""
    first_ns: int = 0
    last_ns: int = 0
    count: int = 1
    score: float = 0.0
    entry_id: int = 0


class Failure(msgspec.Struct, omit_defaults=True):
    """A failure, deduplicated by signature (seed 004 `failure-memory.json` item)."""

    signature: str
    description: str
    prevention: str = ""
    tool: str = ""
    command: str = ""
    error_class: str = ""
    last_error: str = ""
    featureId: str = ""
    session_id: str = ""
    agent_id: str = ""
    count: int = 1
    first_ns: int = 0
    last_ns: int = 0
    resolved: bool = False
    resolved_ns: int = 0
    score: float = 0.0
    cascades: int = 0  # parallel calls cancelled because of it
    target: str = ""  # what the call aimed at (summarizer.common.failures.target_of)


class Constraint(msgspec.Struct, omit_defaults=True):
    """A rule that holds until contradicted or revoked (`active-constraints.json` item)."""

    id: str
    description: str
    source: str = ""  # explicit | user_prompt
    featureId: str = ""
    session_id: str = ""
    active: bool = True
    created_ns: int = 0
    revoked_ns: int = 0


class Feature(msgspec.Struct, omit_defaults=True):
    """A feature an orchestrator reported with `ctxd emit feature-start/feature-complete`."""

    id: str
    name: str = ""
    category: str = ""
    status: str = ""
    startedAt: int = 0
    completedAt: int = 0


class Memory(msgspec.Struct):
    """Everything the summarizer remembers, as read back from the index."""

    decisions: list[Decision] = msgspec.field(default_factory=list)
    failures: list[Failure] = msgspec.field(default_factory=list)
    constraints: list[Constraint] = msgspec.field(default_factory=list)
    features: list[Feature] = msgspec.field(default_factory=list)
    watermark: int = 0  # the last entry id the memory covers
    constraints_in_force: int = 0  # all active constraints (`constraints` holds the first ones)
