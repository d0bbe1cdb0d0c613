"""The agent registry's session cache is bounded across a long pass, and dropping it changes
no attribution (every session's state is in the index, reloaded on its next event)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from helpers import CORPUS

from ctxd_hook.hook import build_line
from indexer.config import Config, IngestConfig
from indexer.ingest import attribution
from indexer.paths import StatePaths
from indexer.writer.catch_up import open_writer

HOOKS = CORPUS / "hooks"
T0 = 1_790_000_000_000_000_000
SEGMENT = "20260101T00.jsonl"
pytestmark = pytest.mark.skipif(not HOOKS.is_dir(), reason="needs the hook corpus")


def spool_corpus(paths: StatePaths) -> int:
    """Every corpus hook payload as one spool segment, in file order; return the sessions."""
    lines, sessions = [], set()
    for path in sorted(HOOKS.rglob("*.jsonl")):
        for raw in path.read_bytes().splitlines():
            if raw.strip():
                lines.append(build_line(raw, T0 + len(lines), 4242))
                sessions.add(raw.split(b'"session_id":"', 1)[-1][:36])
    (paths.spool / SEGMENT).write_bytes(b"".join(lines))
    return len(sessions)


def ingest(root: Path, max_sessions: int, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Ingest the corpus in small batches with the cache bound at `max_sessions`."""
    monkeypatch.setattr(attribution, "MAX_CACHED_SESSIONS", max_sessions)
    monkeypatch.setattr(attribution.AgentRegistry.shed, "__defaults__", (max_sessions,))
    paths = StatePaths(root)
    paths.ensure()
    sessions = spool_corpus(paths)
    writer = open_writer(paths, Config(ingest=IngestConfig(batch_lines=40)))
    try:
        writer.start()
        stats = writer.pass_once()
        # The registry's private cache is what grew: read it to show it stays bounded.
        cached = len(writer.ingestor.registry._sessions)
    finally:
        writer.close()
    conn = sqlite3.connect(paths.index_db)
    try:
        state = {
            name: conn.execute(sql).fetchall()
            for name, sql in {
                "agents": "SELECT * FROM agents ORDER BY session_id, agent_id",
                "aliases": "SELECT * FROM agent_aliases ORDER BY session_id, alias",
                "entries": "SELECT id, session_id, agent_id, agent_type, event FROM entries"
                " ORDER BY id",
            }.items()
        }
    finally:
        conn.close()
    views = {
        str(p.relative_to(paths.sessions)): p.read_bytes()
        for p in sorted(paths.sessions.rglob("*.jsonl"))
    }
    return {"lines": stats.lines, "sessions": sessions, "cached": cached, **state, "views": views}


def test_a_long_pass_keeps_a_bounded_session_cache_and_the_same_attribution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unbounded = ingest(tmp_path / "unbounded", 1_000_000, monkeypatch)
    bounded = ingest(tmp_path / "bounded", 4, monkeypatch)
    assert unbounded["sessions"] > 100 and unbounded["lines"] > 5000
    # Without a bound every session met with a subagent stays in memory (the orchestrator's
    # own events need no session state, so sessions without subagents are never loaded).
    assert unbounded["cached"] > 12
    assert bounded["cached"] <= 4 + 8  # the bound, plus at most one batch's subagent sessions
    assert len(bounded["agents"]) > 20 and len(bounded["aliases"]) > 0  # agents were attributed
    for key in ("agents", "aliases", "entries", "views"):
        assert bounded[key] == unbounded[key], key
