"""`ctxd mcp` with scope "team", through the SDK's own stdio client: every tool answers from
every machine of the project, within its budget; without a team database, one-line errors."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import REPO, clean_env
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from memory_helpers import bash, demo_paths, prompt, replay
from team_helpers import write_config

from indexer.config import load_config
from summarizer.common.tokens import get_counter
from summarizer.memory.compact import compact_now
from summarizer.team.schema import migrate
from summarizer.team.shipper import Shipper

BOB = "b0b00000-0000-4000-8000-00000000000b"


def _call_all(state: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    env = clean_env(CTXD_HOME=str(state), PYTHONPATH=str(REPO))
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "summarizer.cli.app", "mcp"], env=env
    )

    async def run() -> list[Any]:
        async with Client(params, read_timeout_seconds=60) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return asyncio.run(run())


def _text(result: Any) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def _ship(state: Path) -> None:
    config = load_config(state / "config.toml")
    from indexer.paths import StatePaths

    paths = StatePaths(state)
    compact_now(paths, config, trigger="test")
    shipper = Shipper(paths, config, config.team.dsn)
    shipper.ship()
    shipper.close()


@pytest.fixture
def two_machines(tmp_path: Path, team_dsn: str) -> tuple[Path, Path]:
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        migrate(conn)
    alice = tmp_path / "alice"
    write_config(demo_paths(alice), team_dsn, "github.com/acme/shop", user='"alice"')
    bob = tmp_path / "bob"
    paths = replay(
        bob,
        [
            prompt("the albatross importer drops rows", BOB),
            *bash("pytest -q tests/test_import.py", "toolu_bob1", session=BOB,
                  error="Exit code 1\nFAILED test_import - albatross rows missing"),
        ],
    )  # fmt: skip
    write_config(paths, team_dsn, "github.com/acme/shop", user='"bob"')
    _ship(alice)
    _ship(bob)
    return alice, bob


def test_every_tool_answers_from_the_team(two_machines: tuple[Path, Path]) -> None:
    alice, _bob = two_machines
    team = {"scope": "team"}
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": "albatross", **team}),
        ("sessions", team),
        ("session", {"session": BOB[:8], **team}),
        ("agent_history", {"agent_id": "main", "session": BOB, **team}),
        ("failures", team),
        ("decisions", team),
        ("search", {"query": "albatross"}),  # the local scope is unchanged
    ]
    results = _call_all(alice, calls)
    assert not any(r.is_error for r in results), [_text(r) for r in results]
    search, sessions, session, history, failures, decisions, local = map(_text, results)
    assert "(bob@" in search and "**albatross**" in search
    assert BOB in sessions and "(alice@" in sessions and "(bob@" in sessions
    assert f"Session {BOB} of bob@" in session
    assert "[prompt]" in history and "bob@" in history
    assert "UNRESOLVED" in failures and "bob@" in failures
    assert "[decision]" in decisions and "[constraint]" in decisions  # alice's demo memory
    assert "bob@" not in local and "no matches" in local


def test_team_answers_fit_their_budget(two_machines: tuple[Path, Path]) -> None:
    alice, _bob = two_machines
    count = get_counter().count
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": "test", "limit": 100, "budget": 100, "scope": "team"}),
        ("sessions", {"budget": 100, "scope": "team"}),
        ("failures", {"budget": 100, "scope": "team"}),
        ("decisions", {"budget": 100, "scope": "team"}),
    ]
    for (name, _args), r in zip(calls, _call_all(alice, calls), strict=True):
        assert not r.is_error, (name, _text(r))
        assert 0 < count(_text(r)) <= 100, (name, _text(r))


def test_without_a_team_database_each_tool_says_why(tmp_path: Path) -> None:
    state = tmp_path / "s"
    replay(state, [prompt("hello")])
    results = _call_all(state, [("search", {"query": "hello", "scope": "team"}), ("sessions", {})])
    assert results[0].is_error and "no team database: set [team] dsn" in _text(results[0])
    assert not results[1].is_error  # the server goes on
