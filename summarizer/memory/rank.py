"""Ranking (pure): recency decay × recurrence × source weight, and feature-first ordering."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from indexer import SummarizerConfig

T = TypeVar("T")
_NS_PER_HOUR = 3_600_000_000_000
_LN2 = math.log(2.0)

# Source names as stored in the memory, mapped to the config weight that applies to them.
_WEIGHT_FIELD = {
    "explicit": "weight_explicit",
    "compact_summary": "weight_compact_summary",
    "user_prompt": "weight_user_prompt",
    "agent_output": "weight_agent_output",
    "stop": "weight_agent_output",
    "plan": "weight_agent_output",
    "tool": "weight_tool",
}


def source_weight(sources: Iterable[str], cfg: SummarizerConfig) -> float:
    """The highest configured weight among an item's sources (1.0 for unknown sources)."""
    weights = [float(getattr(cfg, _WEIGHT_FIELD.get(s, ""), 1.0)) for s in sources]
    return max(weights, default=1.0)


def recurrence(count: int) -> float:
    """How much repetition counts: 1 + ln(count), so three mentions weigh ~2.1×, not 3×."""
    return 1.0 + math.log(max(1, count))


def rank_key(last_ns: int, count: int, weight: float, half_life_h: float) -> float:
    """log(score) up to a constant shared by all items, so it can be stored and indexed.

    score = 0.5 ** ((now - last_ns) / half_life) × recurrence × weight; its logarithm is
    last_ns × ln2 / half_life + ln(recurrence) + ln(weight) − now × ln2 / half_life, and the
    last term is the same for every item, so ordering by this key is ordering by score for any
    `now`. A half-life <= 0 disables decay.
    """
    decay = last_ns * _LN2 / (half_life_h * _NS_PER_HOUR) if half_life_h > 0 else 0.0
    return decay + math.log(recurrence(count)) + math.log(max(weight, 1e-9))


def score(last_ns: int, count: int, weight: float, ref_ns: int, half_life_h: float) -> float:
    """The item's score as of `ref_ns` (normally the newest event the memory has seen)."""
    age_h = max(0, ref_ns - last_ns) / _NS_PER_HOUR
    decay = 0.5 ** (age_h / half_life_h) if half_life_h > 0 else 1.0
    return decay * recurrence(count) * max(weight, 0.0)


def rank_config(cfg: SummarizerConfig) -> str:
    """A fingerprint of the settings stored rank keys depend on (recomputed when it changes)."""
    fields = [f"{cfg.recency_half_life_h!r}"]
    fields += [f"{name}={getattr(cfg, name)!r}" for name in sorted(set(_WEIGHT_FIELD.values()))]
    return ";".join(fields)


def feature_first(
    items: Sequence[T], feature_id: str | None, feature_of: Callable[[T], str]
) -> list[T]:
    """`items` with those of `feature_id` first, each group in its original (rank) order."""
    if not feature_id:
        return list(items)
    mine = [i for i in items if feature_of(i) == feature_id]
    return mine + [i for i in items if feature_of(i) != feature_id]
