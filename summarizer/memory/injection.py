"""Building an injection from the memory within its budgets, and keeping the default one."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from indexer import Config, CtxdError, StatePaths, SummarizerConfig
from summarizer.common.budget import pack_items, utf16_len
from summarizer.common.models import Memory
from summarizer.common.neutralize import neutralize
from summarizer.common.tokens import TokenCounter, sanitize
from summarizer.memory.inject_cache import (
    TOP_DECISIONS,
    TOP_FAILURES,
    decision_line,
    empty_injection,
    more_constraints_line,
    remember_injection,
    render_injection,
)
from summarizer.memory.rank import feature_first

MAX_CHARS = 10_000
# The rendered injection costs a few tokens more than its packed parts (headers, blank lines);
# this is reserved up front, and the final count on the real string is what guarantees I9.
_OVERHEAD_TOKENS = 24
_OVERHEAD_CHARS = 120


def _kept(items: list[dict[str, Any]], lines: list[str], kept: list[str]) -> list[dict[str, Any]]:
    # pack_items without truncation keeps an in-order subsequence of the lines.
    out, i = [], 0
    for line in kept:
        while lines[i] != line:
            i += 1
        out.append(items[i])
        i += 1
    return out


def build_injection(
    summary: str,
    memory: Memory,
    *,
    feature_id: str | None,
    budget: int,
    cfg: SummarizerConfig,
    counter: TokenCounter,
) -> dict[str, Any]:
    """Seed 004's injection dict, its rendering <= `budget` tokens and <= 10,000 characters.

    Decisions, failures and constraints get their configured share of the budget (scaled to
    `budget`); the summary gets the rest. `feature_id`'s items come first.
    """
    if budget <= 0:
        return empty_injection()
    count = counter.count

    def cut(text: str, max_tokens: int) -> str:
        # Recorded text is data: a passage of it that addresses the model is left out.
        return counter.truncate(neutralize(sanitize(text))[0], max_tokens)

    scale = budget / cfg.injection_budget if cfg.injection_budget > 0 else 1.0
    d_budget = int(cfg.decisions_budget * scale)
    f_budget = int(cfg.failures_budget * scale)
    c_budget = int(cfg.constraints_budget * scale)
    top_d = feature_first(memory.decisions, feature_id, lambda d: d.featureId)[:TOP_DECISIONS]
    # Unresolved failures first (what to avoid now), each group in rank order.
    ranked_f = sorted(memory.failures, key=lambda f: f.resolved)
    top_f = feature_first(ranked_f, feature_id, lambda f: f.featureId)[:TOP_FAILURES]
    # Each shown item may use its share of the section (seed 004: ~50 tokens each).
    per_decision = max(12, d_budget // max(1, len(top_d)) - 8)
    decisions = [
        {"decision": cut(d.decision, per_decision), "featureId": d.featureId or "n/a"}
        for d in top_d
    ]
    per_failure = max(16, f_budget // max(1, len(top_f)) - 4)
    failures = []
    for f in top_f:
        prevention = cut(f.prevention or _unresolved(f.count), max(6, per_failure * 9 // 20))
        room = max(8, per_failure - count(prevention))
        description = cut(f.description, room)
        failures.append(
            {
                "description": description,
                "prevention": prevention,
                "featureId": f.featureId or "n/a",
            }
        )
    constraints = [
        {"description": cut(c.description, 40), "featureId": c.featureId or "n/a"}
        for c in feature_first(memory.constraints, feature_id, lambda c: c.featureId)
    ]
    result = empty_injection()
    room_tokens = budget - _OVERHEAD_TOKENS
    room_chars = MAX_CHARS - _OVERHEAD_CHARS
    for key, items, share, render in (
        (
            "decisions",
            decisions,
            d_budget,
            decision_line,
        ),
        ("failures", failures, f_budget, lambda f: f"- {f['description']}: {f['prevention']}"),
        ("constraints", constraints, c_budget, lambda c: f"- {c['description']}"),
    ):
        result[key], used_t, used_c = _pack(
            items, render, min(share, room_tokens), room_chars, counter
        )
        room_tokens -= used_t
        room_chars -= used_c
    # A constraint is never dropped silently: the injection says how many more are in force.
    in_force = max(memory.constraints_in_force, len(memory.constraints))
    if len(result["constraints"]) < in_force:
        result["moreConstraints"] = in_force - len(result["constraints"])
        line = more_constraints_line(result["moreConstraints"])
        room_tokens -= count(line) + 2
        room_chars -= utf16_len(line) + 1
    lines = [line for line in neutralize(sanitize(summary))[0].split("\n") if line.strip()]
    kept = pack_items(
        lines, room_tokens, count, max_chars=room_chars, truncate=cut, char_len=utf16_len
    )
    result["summary"] = "\n".join(kept)
    return _fit(result, budget, count, in_force)


def _pack(
    items: list[dict[str, Any]],
    render: Callable[[dict[str, Any]], str],
    max_tokens: int,
    max_chars: int,
    counter: TokenCounter,
) -> tuple[list[dict[str, Any]], int, int]:
    if not items or max_tokens <= 0 or max_chars <= 0:
        return [], 0, 0
    lines = [render(i) for i in items]
    kept = pack_items(lines, max_tokens, counter.count, max_chars=max_chars, char_len=utf16_len)
    if not kept:
        return [], 0, 0
    text = "\n".join(kept)
    # What the block costs in the rendering: its lines plus a header and the blank line.
    return _kept(items, lines, kept), counter.count(text) + 8, utf16_len(text) + 40


def _unresolved(count: int) -> str:
    return f"not resolved yet (seen {count}×)" if count > 1 else "not resolved yet"


def _fit(
    result: dict[str, Any], budget: int, count: Callable[[str], int], in_force: int = 0
) -> dict[str, Any]:
    # The guarantee: count the exact rendering and drop from the end until it fits.
    while True:
        if in_force > len(result["constraints"]):
            result["moreConstraints"] = in_force - len(result["constraints"])
        has_items = result["decisions"] or result["failures"] or result["constraints"]
        if not result["summary"] and not has_items:
            return empty_injection()
        text = render_injection(result)
        tokens = count(text)
        if tokens <= budget and utf16_len(text) <= MAX_CHARS:
            result["tokenCount"] = tokens
            return result
        if result["summary"]:
            result["summary"] = "\n".join(result["summary"].split("\n")[:-1])
        else:
            for key in ("constraints", "failures", "decisions"):
                if result[key]:
                    result[key] = result[key][:-1]
                    break


def prebuild_injection(
    conn: sqlite3.Connection,
    paths: StatePaths,
    config: Config,
    memory: Memory,
    summary: str,
    counter: TokenCounter,
) -> None:
    """After a compaction: keep `ctxd inject`'s default answer for the new memory, if the
    config file still says what `config` says (the key is the file's bytes)."""
    from indexer import parse_config
    from summarizer.memory.inject_cache import cache_key, read_config_bytes

    raw = read_config_bytes(paths)
    try:
        if (parse_config(raw) if raw else Config()) != config:
            return  # edited since this process loaded it: the next `ctxd inject` computes
    except CtxdError:
        return
    cfg = config.summarizer
    injection = build_injection(
        summary, memory, feature_id=None, budget=cfg.injection_budget, cfg=cfg, counter=counter
    )
    remember_injection(paths, cache_key(raw, None, None), memory.watermark, injection)
