"""Explicit events (`ctxd emit` records) as memory observations: decisions, failures, features."""

from __future__ import annotations

from typing import Any

from indexer import INT64_MAX, Entry
from summarizer.common.text import ITEM_CHARS, NEGATIVE_RE, clean, clip, rule_head, text_key
from summarizer.memory.observations import (
    ConstraintObs,
    DecisionObs,
    FailureObs,
    FeatureObs,
    Observation,
    RevokeObs,
    SuccessObs,
    Where,
)

__all__ = ["observe_explicit"]

_OK_FEATURE = frozenset({"completed", "complete", "done", "passed", "passing", "success", "ok"})
_FAILED_FEATURE = frozenset({"failed", "failing", "failure", "error", "blocked"})


def observe_explicit(e: Entry, at: Where, record: dict[str, Any]) -> list[Observation]:
    """What an explicit event (`ctxd emit`) records: a decision, failure, constraint (or its
    revocation), or a feature's start or end."""
    kind = e.event
    feature_id = clean(str(record.get("featureId", "") or ""))[:200]
    if kind == "decision":
        text = clean(str(record.get("decision", "") or record.get("description", "")))
        if not text:
            return []
        rationale = clean(str(record.get("rationale", "") or ""))
        full = f"{text} ({rationale})" if rationale else text
        key = clean(str(record.get("id", "") or ""))[:64] or text_key(text)
        return [DecisionObs(key, clip(full, ITEM_CHARS), "explicit", feature_id, at)]
    if kind == "failure":
        text = clean(str(record.get("description", "")))
        if not text:
            return []
        command = clean(str(record.get("command", "") or ""))
        key = clean(str(record.get("id", "") or ""))[:64] or text_key(text)
        return [
            FailureObs(
                signature=key,
                cmd_key=f"explicit\x1f{key}",
                tool=clean(str(record.get("tool", "") or "explicit"))[:64],
                command=clip(command, 300),
                error_class="",
                error_line=clip(clean(str(record.get("error", "") or "")), 200),
                description=clip(text, ITEM_CHARS),
                source="explicit",
                feature_id=feature_id,
                prevention=clip(clean(str(record.get("prevention", "") or "")), ITEM_CHARS),
                resolved=str(record.get("status", "")).lower() == "resolved",
                at=at,
            )
        ]
    if kind == "constraint":
        revoke = clean(str(record.get("revoke", "") or ""))[:ITEM_CHARS]
        if revoke:
            return [RevokeObs(revoke, frozenset(), False, (), False, at)]
        text = clean(str(record.get("description", "")))
        if not text:
            return []
        key = clean(str(record.get("id", "") or ""))[:64] or text_key(text)
        negative = bool(NEGATIVE_RE.search(text))
        return [
            ConstraintObs(
                key, clip(text, ITEM_CHARS), "explicit", feature_id, negative, rule_head(text), at
            )
        ]
    if kind in ("feature_start", "feature_complete"):
        return _feature(kind, record, at)
    return []


def _int(value: Any) -> int:
    """A record's number as a storable integer: 0 unless it is within 0..2^63-1."""
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: int(inf), from 1e400
        return 0
    return number if 0 <= number <= INT64_MAX else 0


def _feature(kind: str, record: dict[str, Any], at: Where) -> list[Observation]:
    feature_id = clean(str(record.get("id", "") or record.get("featureId", "")))[:200]
    if not feature_id:
        return []
    is_start = kind == "feature_start"
    status = clean(str(record.get("status", "") or ("in_progress" if is_start else "completed")))
    ms = at.ts_ns // 1_000_000
    started = _int(record.get("startedAt")) or (ms if is_start else 0)
    completed = 0 if is_start else (_int(record.get("completedAt")) or ms)
    out: list[Observation] = [
        FeatureObs(
            feature_id,
            clip(clean(str(record.get("name", "") or "")), 200),
            clip(clean(str(record.get("category", "") or "")), 100),
            status[:40],
            started,
            completed,
            is_start,
            at,
        )
    ]
    if not is_start and status.lower() in _FAILED_FEATURE:
        name = clean(str(record.get("name", "") or ""))
        label = f"Feature {feature_id}" + (f" ({name})" if name else "")
        out.append(
            FailureObs(
                signature=f"feature:{feature_id}"[:64],
                cmd_key=f"feature\x1f{feature_id}",
                tool="feature",
                command=feature_id,
                error_class=status.lower(),
                error_line=clip(clean(str(record.get("error", "") or "")), 200),
                description=clip(f"{label} ended with status {status}", ITEM_CHARS),
                source="explicit",
                feature_id=feature_id,
                prevention=clip(clean(str(record.get("prevention", "") or "")), ITEM_CHARS),
                resolved=False,
                at=at,
            )
        )
    elif not is_start and status.lower() in _OK_FEATURE:
        out.append(SuccessObs(f"feature\x1f{feature_id}", "the feature was completed", at))
    return out
