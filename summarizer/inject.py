"""The orchestrator's view (seed 004): `ContextAgent.get_injection()` and `summarize()`."""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from indexer import hook, store
from indexer.config import Config, SummarizerConfig, load_config
from indexer.errors import CtxdError
from indexer.paths import StatePaths
from indexer.writer import lag
from summarizer.budget import pack_items, utf16_len
from summarizer.inject_cache import (
    TOP_DECISIONS,
    TOP_FAILURES,
    current_watermark,
    decision_line,
    empty_injection,
    remember_injection,
    render_injection,
)
from summarizer.models import Memory
from summarizer.rank import feature_first
from summarizer.tokens import TokenCounter, get_counter, sanitize

log = logging.getLogger("ctxd.inject")

MAX_CHARS = 10_000
# The rendered injection costs a few tokens more than its packed parts (headers, blank lines);
# this is reserved up front, and the final count on the real string is what guarantees I9.
_OVERHEAD_TOKENS = 24
_OVERHEAD_CHARS = 120


class InjectionError(CtxdError):
    """The injection could not be built (the message says why)."""


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
        return counter.truncate(sanitize(text), max_tokens)

    scale = budget / cfg.injection_budget if cfg.injection_budget > 0 else 1.0
    d_budget = int(cfg.decisions_budget * scale)
    f_budget = int(cfg.failures_budget * scale)
    c_budget = int(cfg.constraints_budget * scale)
    top_d = feature_first(memory.decisions, feature_id, lambda d: d.featureId)[:TOP_DECISIONS]
    top_f = feature_first(memory.failures, feature_id, lambda f: f.featureId)[:TOP_FAILURES]
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
    lines = [line for line in sanitize(summary).split("\n") if line.strip()]
    kept = pack_items(
        lines, room_tokens, count, max_chars=room_chars, truncate=cut, char_len=utf16_len
    )
    result["summary"] = "\n".join(kept)
    return _fit(result, budget, count)


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


def _fit(result: dict[str, Any], budget: int, count: Callable[[str], int]) -> dict[str, Any]:
    # The guarantee: count the exact rendering and drop from the end until it fits.
    while True:
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


def _state_paths(
    project_root: str | os.PathLike[str], state_dir: str | os.PathLike[str] | None
) -> StatePaths:
    if state_dir is not None:
        return StatePaths(Path(state_dir).absolute())
    root = str(Path(project_root).absolute())
    # The same rule the hooks use, with the orchestrator's project as CLAUDE_PROJECT_DIR.
    environ = {**os.environ, "CLAUDE_PROJECT_DIR": root}
    return StatePaths(Path(hook.state_dir(environ, root)).absolute())


class ContextAgent:
    """Seed 004's Context Agent: an in-process module of the orchestrator; never raises.

    `project_root` is the orchestrated project; its state directory is found like the hooks
    find it ($CTXD_HOME, else <project_root>/.ctxd), or given as `state_dir`.
    """

    def __init__(
        self,
        project_root: str | os.PathLike[str] = ".",
        *,
        state_dir: str | os.PathLike[str] | None = None,
        refresh: bool = True,
    ) -> None:
        self.paths = _state_paths(project_root, state_dir)
        self.refresh = refresh

    def _config(self) -> Config:
        return load_config(self.paths.config)

    def get_injection(self, feature_id: str | None = None, budget: int = 2000) -> dict[str, Any]:
        """Seed 004's injection: summary, 3 decisions, 2 failures, constraints, tokenCount."""
        try:
            return self._injection(feature_id, budget)
        except Exception as e:  # the orchestrator edge: report, never raise
            log.warning("get_injection failed: %s", e, exc_info=True)
            return empty_injection(f"{type(e).__name__}: {e}")

    def _injection(self, feature_id: str | None, budget: int) -> dict[str, Any]:
        from summarizer.memory import has_memory, load_memory, watermark
        from summarizer.summary import read_summary, render_summary, summary_lines

        config = self._config()
        cfg = config.summarizer
        if self.refresh:
            self._refresh(config)
        if not self.paths.index_db.exists():
            return empty_injection()
        counter = get_counter(cfg.encoding)
        conn = store.connect(self.paths.index_db, readonly=True)
        try:
            if not has_memory(conn):
                return empty_injection()
            memory = load_memory(conn, cfg, feature_id=feature_id)
            prebuilt = read_summary(self.paths)
            if prebuilt.get("watermark") == watermark(conn) and isinstance(
                prebuilt.get("summary"), str
            ):
                summary = str(prebuilt["summary"])
            else:
                summary = render_summary(
                    summary_lines(conn, memory), cfg.summary_max_tokens, counter
                )
        finally:
            conn.close()
        return build_injection(
            summary, memory, feature_id=feature_id, budget=int(budget), cfg=cfg, counter=counter
        )

    def _refresh(self, config: Config) -> None:
        """Compact first when the spool or the index is ahead of the memory (I12); cheap if not."""
        from summarizer.compact import compact_now, published_watermark

        paths = self.paths
        if not paths.root.is_dir():
            return
        if paths.index_db.exists():
            conn = store.connect(paths.index_db, readonly=True)
            try:
                current = lag(conn, paths.spool)[0] == 0 and published_watermark(
                    conn
                ) >= store.max_entry_id(conn)
            finally:
                conn.close()
            if current:
                return
        elif not any(paths.spool.glob("*.jsonl")):
            return
        try:
            compact_now(
                paths,
                config,
                trigger="inject",
                wait_s=min(5.0, config.summarizer.request_timeout_s),
            )
        except Exception as e:  # stale context is better than none
            log.warning("could not refresh the memory before injecting: %s", e)

    def summarize(
        self, feature_ids: Sequence[str] | None = None, trigger: str = "manual"
    ) -> dict[str, Any]:
        """Compact now; `{success, newDecisions, newFailures, error?}` (seed 004)."""
        from summarizer.compact import compact_now

        try:
            result = compact_now(self.paths, self._config(), trigger=trigger or "manual")
        except Exception as e:
            log.warning("summarize failed: %s", e, exc_info=True)
            return {
                "success": False,
                "newDecisions": 0,
                "newFailures": 0,
                "error": f"{type(e).__name__}: {e}",
            }
        out: dict[str, Any] = {
            "success": True,
            "newDecisions": result.new_decisions,
            "newFailures": result.new_failures,
        }
        if feature_ids:
            out["features"] = list(feature_ids)
        return out

    def record(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Record an explicit event (`decision`, `failure`, `constraint`, `feature_start`, …)."""
        from summarizer.emit import emit

        return emit(kind, paths=self.paths, **fields)


def injection_for_cli(
    paths: StatePaths, feature_id: str | None, budget: int | None, key: str
) -> dict[str, Any]:
    """`ctxd inject`'s slow path: catch up and compact first (I12), compute the injection and
    keep it under `key` when the memory did not move meanwhile."""
    from summarizer.compact import compact_now

    config = load_config(paths.config)
    if paths.root.is_dir():
        compact_now(paths, config, trigger="inject")
    before = current_watermark(paths)
    agent = ContextAgent(state_dir=paths.root, refresh=False)
    tokens = budget if budget is not None else config.summarizer.injection_budget
    injection = agent.get_injection(feature_id, tokens)
    if "error" in injection:
        raise InjectionError(str(injection["error"]))
    if before is not None and current_watermark(paths) == before:
        remember_injection(paths, key, before, injection)
    return injection


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
    from indexer.config import parse_config
    from summarizer.inject_cache import cache_key, read_config_bytes

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
