"""summarizer.memory.rank: recency decay × recurrence × source weight; stored keys order like scores."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from indexer.config import SummarizerConfig
from summarizer.memory.rank import (
    feature_first,
    rank_config,
    rank_key,
    recurrence,
    score,
    source_weight,
)

HOUR = 3_600_000_000_000
NOW = 1_795_000_000_000_000_000
CFG = SummarizerConfig()

ITEM = st.tuples(
    st.integers(NOW - 1000 * HOUR, NOW),  # last seen
    st.integers(1, 500),  # count
    st.sampled_from([0.5, 1.0, 2.0, 3.0]),  # weight
)


@given(a=ITEM, b=ITEM, half_life=st.sampled_from([0.0, 1.0, 24.0, 24 * 365.0]))
def test_rank_key_orders_like_score_for_any_now(
    a: tuple[int, int, float], b: tuple[int, int, float], half_life: float
) -> None:
    ka, kb = rank_key(*a, half_life), rank_key(*b, half_life)
    sa, sb = score(*a, NOW, half_life), score(*b, NOW, half_life)
    if not math.isclose(sa, sb, rel_tol=1e-9, abs_tol=1e-300) and sa > 0 and sb > 0:
        assert (ka > kb) == (sa > sb)


def test_score_is_decay_times_recurrence_times_weight() -> None:
    assert score(NOW, 1, 1.0, NOW, 24.0) == 1.0
    assert math.isclose(score(NOW - 24 * HOUR, 1, 1.0, NOW, 24.0), 0.5)
    assert math.isclose(score(NOW - 48 * HOUR, 1, 3.0, NOW, 24.0), 0.75)
    assert math.isclose(score(NOW, 3, 1.0, NOW, 24.0), recurrence(3))
    assert score(NOW - 10_000 * HOUR, 1, 1.0, NOW, 0.0) == 1.0  # half-life 0: no decay


def test_recurrence_grows_slowly() -> None:
    assert recurrence(1) == 1.0
    assert 2.0 < recurrence(3) < 2.2
    assert recurrence(0) == 1.0


def test_source_weight_uses_config_and_takes_the_best_source() -> None:
    assert source_weight(["explicit"], CFG) == CFG.weight_explicit
    assert source_weight(["stop", "user_prompt"], CFG) == CFG.weight_user_prompt
    assert source_weight(["tool"], SummarizerConfig(weight_tool=0.25)) == 0.25
    assert source_weight(["unknown"], CFG) == 1.0
    assert source_weight([], CFG) == 1.0


def test_rank_config_changes_with_weights_and_half_life() -> None:
    base = rank_config(CFG)
    assert rank_config(SummarizerConfig()) == base
    assert rank_config(SummarizerConfig(recency_half_life_h=1.0)) != base
    assert rank_config(SummarizerConfig(weight_explicit=9.0)) != base
    assert rank_config(SummarizerConfig(max_decisions=3)) == base


def test_feature_first_is_stable() -> None:
    items = [("a", "F1"), ("b", "F2"), ("c", "F1"), ("d", "")]
    assert feature_first(items, "F1", lambda i: i[1]) == [
        ("a", "F1"),
        ("c", "F1"),
        ("b", "F2"),
        ("d", ""),
    ]
    assert feature_first(items, None, lambda i: i[1]) == items
    assert feature_first(items, "F9", lambda i: i[1]) == items
