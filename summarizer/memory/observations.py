"""The observations extraction yields: small frozen records, each with where it was made."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Where:
    """Where and when an observation was made."""

    entry_id: int
    ts_ns: int
    session_id: str
    agent_id: str


@dataclass(frozen=True, slots=True)
class DecisionObs:
    key: str
    text: str
    source: str  # explicit | stop | plan | user_prompt (agent_output, compact_summary: earlier)
    feature_id: str
    at: Where


@dataclass(frozen=True, slots=True)
class FailureObs:
    signature: str
    cmd_key: str
    tool: str
    command: str
    error_class: str
    error_line: str
    description: str
    source: str  # tool | agent_output | explicit
    feature_id: str
    prevention: str
    resolved: bool
    at: Where
    target_key: str = ""  # what the call aimed at (summarizer.common.failures.target_of)
    cascade: str = ""  # CASCADE or USER_STOP: no failure of its own


@dataclass(frozen=True, slots=True)
class SuccessObs:
    cmd_key: str
    verb: str  # how the success is told in a prevention ("the command passed")
    at: Where
    target_key: str = ""
    command: str = ""  # what passed (told when it differs from the failed command)


@dataclass(frozen=True, slots=True)
class ConstraintObs:
    key: str
    text: str
    source: str  # explicit | user_prompt
    feature_id: str
    negative: bool
    head: tuple[str, ...]
    at: Where


@dataclass(frozen=True, slots=True)
class RevokeObs:
    target: str  # explicit: a constraint id or text; "" for a lifting sentence
    terms: frozenset[str]  # the lifting or opposing sentence's key terms
    negative: bool
    head: tuple[str, ...]
    is_rule: bool  # an opposite rule revokes by head; a lift revokes by object terms
    at: Where


@dataclass(frozen=True, slots=True)
class GiveUpObs:
    """A sentence of the user's that gives something up by name (summarizer.memory.supersede)."""

    rejected: frozenset[str]
    at: Where


@dataclass(frozen=True, slots=True)
class NeutralizedObs:
    """Passages of recorded text that addressed the model, left out (common.neutralize)."""

    count: int
    at: Where


@dataclass(frozen=True, slots=True)
class FeatureObs:
    feature_id: str
    name: str
    category: str
    status: str
    started_at: int
    completed_at: int
    is_start: bool
    at: Where


@dataclass(frozen=True, slots=True)
class EditObs:
    path: str
    at: Where


@dataclass(frozen=True, slots=True)
class TodoObs:
    op: str  # replace | create | update
    items: tuple[tuple[str, str, str], ...]  # (id, content, status)
    at: Where


@dataclass(frozen=True, slots=True)
class SessionTextObs:
    field: str  # prompt | ack (an acknowledgement after the request) | report | compact
    text: str
    at: Where


Observation = (
    DecisionObs
    | FailureObs
    | SuccessObs
    | ConstraintObs
    | RevokeObs
    | GiveUpObs
    | NeutralizedObs
    | FeatureObs
    | EditObs
    | TodoObs
    | SessionTextObs
)
