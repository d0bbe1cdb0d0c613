"""The orchestrator's view (seed 004): `ContextAgent.get_injection()` and `summarize()`."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from indexer import Config, CtxdError, StatePaths, history, lag, load_config
from indexer import state_dir as resolve_state_dir
from summarizer.common.tokens import get_counter
from summarizer.memory.hooks import AfterCompaction
from summarizer.memory.inject_cache import (
    current_watermark,
    empty_injection,
    remember_injection,
)
from summarizer.memory.injection import (
    MAX_CHARS,
    build_injection,
    prebuild_injection,
)

__all__ = [
    "MAX_CHARS",
    "ContextAgent",
    "InjectionError",
    "build_injection",
    "injection_for_cli",
    "log",
    "prebuild_injection",
]

log = logging.getLogger("ctxd.inject")


class InjectionError(CtxdError):
    """The injection could not be built (the message says why)."""


def _state_paths(
    project_root: str | os.PathLike[str], state_dir: str | os.PathLike[str] | None
) -> StatePaths:
    if state_dir is not None:
        return StatePaths(Path(state_dir).absolute())
    root = str(Path(project_root).absolute())
    # The same rule the hooks use, with the orchestrator's project as CLAUDE_PROJECT_DIR.
    environ = {**os.environ, "CLAUDE_PROJECT_DIR": root}
    return StatePaths(Path(resolve_state_dir(environ, root)).absolute())


class ContextAgent:
    """Seed 004's Context Agent: an in-process module of the orchestrator; never raises.

    `project_root` is the orchestrated project; its state directory is found like the hooks
    find it ($CTXD_HOME, else <project_root>/.ctxd), or given as `state_dir`.
    `after_compaction` runs after each compaction it does in process (the public
    `summarizer.ContextAgent` passes the session notes' refresh).
    """

    def __init__(
        self,
        project_root: str | os.PathLike[str] = ".",
        *,
        state_dir: str | os.PathLike[str] | None = None,
        refresh: bool = True,
        after_compaction: Sequence[AfterCompaction] = (),
    ) -> None:
        self.paths = _state_paths(project_root, state_dir)
        self.refresh = refresh
        self.after_compaction = tuple(after_compaction)

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
        from summarizer.memory.reader import load_memory
        from summarizer.memory.store import has_memory, watermark
        from summarizer.memory.summary import read_summary, render_summary, summary_lines

        config = self._config()
        cfg = config.summarizer
        if self.refresh:
            self._refresh(config)
        if not self.paths.index_db.exists():
            return empty_injection()
        counter = get_counter(cfg.encoding)
        conn = history.connect(self.paths.index_db, readonly=True)
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
        from summarizer.memory.compact import compact_now, published_watermark

        paths = self.paths
        if not paths.root.is_dir():
            return
        if paths.index_db.exists():
            conn = history.connect(paths.index_db, readonly=True)
            try:
                current = lag(conn, paths.spool)[0] == 0 and published_watermark(
                    conn
                ) >= history.max_entry_id(conn)
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
                after=self.after_compaction,
            )
        except Exception as e:  # stale context is better than none
            log.warning("could not refresh the memory before injecting: %s", e)

    def summarize(
        self, feature_ids: Sequence[str] | None = None, trigger: str = "manual"
    ) -> dict[str, Any]:
        """Compact now; `{success, newDecisions, newFailures, error?}` (seed 004)."""
        from summarizer.memory.compact import compact_now

        try:
            result = compact_now(
                self.paths,
                self._config(),
                trigger=trigger or "manual",
                after=self.after_compaction,
            )
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
        from summarizer.memory.emit import emit

        return emit(kind, paths=self.paths, **fields)


def injection_for_cli(
    paths: StatePaths,
    feature_id: str | None,
    budget: int | None,
    key: str,
    *,
    after_compaction: Sequence[AfterCompaction] = (),
) -> dict[str, Any]:
    """`ctxd inject`'s slow path: catch up and compact first (I12), compute the injection and
    keep it under `key` when the memory did not move meanwhile."""
    from summarizer.memory.compact import compact_now

    config = load_config(paths.config)
    if paths.root.is_dir():
        compact_now(paths, config, trigger="inject", after=after_compaction)
    before = current_watermark(paths)
    agent = ContextAgent(state_dir=paths.root, refresh=False)
    tokens = budget if budget is not None else config.summarizer.injection_budget
    injection = agent.get_injection(feature_id, tokens)
    if "error" in injection:
        raise InjectionError(str(injection["error"]))
    if before is not None and current_watermark(paths) == before:
        remember_injection(paths, key, before, injection)
    return injection
