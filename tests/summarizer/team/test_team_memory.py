"""The memory items in the team store follow the local memory (new, restated, revoked,
forgotten), and nothing unredacted leaves the machine: entries, catalog and memory alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from memory_helpers import base, bash, prompt, replay
from planted_secrets import PLANTED, fingerprint
from team_helpers import write_config

from indexer.config import load_config
from indexer.paths import StatePaths
from summarizer.cli.commands.forget import forget
from summarizer.memory.compact import compact_now
from summarizer.memory.emit import emit
from summarizer.team.schema import migrate
from summarizer.team.shipper import Shipper

S1 = "5e55a000-0000-4000-8000-000000000001"
S2 = "5e55a000-0000-4000-8000-000000000002"


@pytest.fixture
def dsn(team_dsn: str) -> str:
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        migrate(conn)
    return team_dsn


def _compact_and_ship(paths: StatePaths) -> None:
    config = load_config(paths.config)
    compact_now(paths, config, trigger="test")
    shipper = Shipper(paths, config, str(config.team.dsn))
    shipper.ship()
    shipper.close()


def _memory(dsn: str) -> dict[tuple[str, str], tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT kind, summary, active, session_id, prevention FROM ctxd.memory"
        ).fetchall()
    return {(r[0], r[1]): r[2:] for r in rows}


def test_memory_items_follow_the_local_memory(tmp_path: Path, dsn: str) -> None:
    paths = replay(tmp_path / "s", [prompt("start the export work", S1)])
    write_config(paths, dsn)
    emit("constraint", paths=paths, session_id=S1, description="Never touch the legacy billing module", id="legacy")
    emit("decision", paths=paths, session_id=S1, decision="Stream rows with the csv module")
    replay(paths.root, bash("pytest -q tests/test_export.py", "toolu_f1", session=S1,
                            error="Exit code 1\nFAILED tests/test_export.py::test_header"))  # fmt: skip
    _compact_and_ship(paths)
    shipped = _memory(dsn)
    assert shipped[("constraint", "Never touch the legacy billing module")][0] is True
    assert ("decision", "Stream rows with the csv module") in shipped
    failures = [k for k in shipped if k[0] == "failure"]
    assert failures and shipped[failures[0]][0] is True  # unresolved
    # The failure is fixed and the rule revoked: the team store follows.
    replay(paths.root, bash("pytest -q tests/test_export.py", "toolu_f2", session=S1))
    emit("constraint", paths=paths, session_id=S1, revoke="legacy")
    _compact_and_ship(paths)
    shipped = _memory(dsn)
    assert shipped[("constraint", "Never touch the legacy billing module")][0] is False
    assert shipped[failures[0]][0] is False


def test_an_item_restated_then_forgotten_leaves_the_team_store(tmp_path: Path, dsn: str) -> None:
    paths = replay(tmp_path / "s", [prompt("first session", S1), prompt("second session", S2)])
    write_config(paths, dsn)
    emit("decision", paths=paths, session_id=S1, decision="Keep the cache in process")
    _compact_and_ship(paths)
    assert _memory(dsn)[("decision", "Keep the cache in process")][1] == S1
    # Restated in S2 (the local item now names S2) but not shipped since; then S2 is forgotten.
    emit("decision", paths=paths, session_id=S2, decision="Keep the cache in process")
    compact_now(paths, load_config(paths.config), trigger="test")
    forget(paths, S2, None)
    _compact_and_ship(paths)
    assert ("decision", "Keep the cache in process") not in _memory(dsn)


def test_nothing_unredacted_reaches_the_team_store(tmp_path: Path, dsn: str) -> None:
    payloads: list[dict[str, Any]] = []
    for i, p in enumerate(PLANTED):
        text = p.context.format(s=p.secret)
        payloads += [
            prompt(f"please run {text}", S1),
            *bash(text, f"toolu_s{i}", session=S1, error=f"Exit code 1\nfailed: {text}"),
            base("PreToolUse", S1, tool_name="Task", tool_use_id=f"toolu_t{i}",
                 tool_input={"description": f"agent for {text}", "subagent_type": "helper",
                             "prompt": f"AgentId: agent-{i}\nDo this: {text}"}),
            base("Stop", S1, last_assistant_message=f"Done. I used {text}"),
        ]  # fmt: skip
    paths = replay(tmp_path / "s", payloads)
    write_config(paths, dsn)
    for p in PLANTED:
        text = p.context.format(s=p.secret)
        emit("decision", paths=paths, session_id=S1, decision=f"Deploy with {text}")
        emit("constraint", paths=paths, session_id=S1, description=f"Never print {text}")
    _compact_and_ship(paths)
    with psycopg.connect(dsn) as conn:
        dumped = []
        for table in ("entries", "sessions", "agents", "memory", "machines"):
            # Every column of every row, as text.
            dumped += [str(r[0]) for r in conn.execute(f"SELECT t::text FROM ctxd.{table} t")]
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM ctxd.entries), (SELECT count(*) FROM ctxd.memory)"
        ).fetchone()
    everything = "\n".join(dumped)
    assert counts[0] >= 4 * len(PLANTED) and counts[1] >= len(PLANTED)
    assert "REDACTED" in everything
    leaked = [p.kind for p in PLANTED if fingerprint(p.secret) in everything]
    assert not leaked, leaked
