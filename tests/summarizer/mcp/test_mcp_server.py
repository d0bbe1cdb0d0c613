"""`ctxd mcp` through the SDK's own stdio client: tools, answers, budgets, errors; init's entry."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, clean_env, query, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from memory_helpers import demo_paths, prompt, replay

from indexer.config import load_config
from summarizer.common.tokens import get_counter
from summarizer.mcp.tools import fit
from summarizer.memory.compact import compact_now

OLD = "0a1b2c3d-0000-4000-8000-000000000001"
TOOLS = {"search", "sessions", "session", "agent_history", "failures", "decisions"}


def _params(state: Path) -> StdioServerParameters:
    env = clean_env(CTXD_HOME=str(state), PYTHONPATH=str(REPO))
    return StdioServerParameters(
        command=sys.executable, args=["-m", "summarizer.cli.app", "mcp"], env=env
    )


def _call_all(state: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[Any, list[Any]]:
    async def run() -> tuple[Any, list[Any]]:
        async with Client(_params(state), read_timeout_seconds=60) as client:
            listed = await client.list_tools()
            results = [await client.call_tool(name, args) for name, args in calls]
            return listed, results

    return asyncio.run(run())


def _text(result: Any) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


@pytest.fixture(scope="module")
def demo_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    state = tmp_path_factory.mktemp("mcp") / "state"
    paths = demo_paths(state)
    replay(state, [prompt("an earlier session about the albatross migration", OLD)])
    compact_now(paths, load_config(paths.config), trigger="test")
    return state


def _demo_session(state: Path) -> str:
    [(sid,)] = query(state, "SELECT session_id FROM sessions WHERE session_id != ?", (OLD,))
    return str(sid)


def test_tools_are_listed_with_short_descriptions(demo_state: Path) -> None:
    listed, _ = _call_all(demo_state, [])
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == TOOLS
    count = get_counter().count
    for t in tools.values():
        assert count(t.description or "") <= 30, t.description
        assert "budget" in t.input_schema["properties"]


def test_each_tool_answers_from_the_index(demo_state: Path) -> None:
    session_id = _demo_session(demo_state)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": "albatross"}),
        ("sessions", {}),
        ("session", {"session": session_id[:8]}),
        ("agent_history", {"agent_id": "main"}),
        ("failures", {}),
        ("decisions", {}),
        ("search", {"query": "test", "kind": "failure"}),
    ]
    _, results = _call_all(demo_state, calls)
    assert not any(r.is_error for r in results), [_text(r) for r in results]
    search, sessions, session, history, failures, decisions, failure_hits = map(_text, results)
    assert "**albatross**" in search and OLD in search
    assert session_id in sessions and OLD in sessions
    assert session.strip() and session_id[:8] in session
    assert "[prompt]" in history or "[tool_" in history
    assert "resolved" in failures and "fixed by:" in failures
    assert "[decision]" in decisions and "[constraint]" in decisions
    assert " failure " in failure_hits


def test_every_answer_fits_its_budget(demo_state: Path) -> None:
    session_id = _demo_session(demo_state)
    count = get_counter().count
    for budget in (100, 300, 2000):
        calls: list[tuple[str, dict[str, Any]]] = [
            ("search", {"query": "test", "limit": 100, "budget": budget}),
            ("sessions", {"budget": budget}),
            ("session", {"session": session_id, "budget": budget}),
            ("agent_history", {"agent_id": "main", "lines": 1000, "budget": budget}),
            ("failures", {"budget": budget}),
            ("decisions", {"budget": budget}),
        ]
        _, results = _call_all(demo_state, calls)
        for (name, _args), r in zip(calls, results, strict=True):
            assert not r.is_error, (name, _text(r))
            assert 0 < count(_text(r)) <= budget, (name, budget, count(_text(r)))
    _, [small] = _call_all(demo_state, [("search", {"query": "test", "budget": 100})])
    assert "more not shown" in _text(small)


def test_bad_arguments_are_mcp_errors_and_the_server_goes_on(demo_state: Path) -> None:
    session_id = _demo_session(demo_state)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": 5}),
        ("search", {}),
        ("search", {"query": '"NEAR(" OR'}),
        ("search", {"query": "!!!"}),
        ("search", {"query": "x", "kind": "nonsense"}),
        ("search", {"query": "x", "since": "yesterday"}),
        ("session", {"session": "no-such-session"}),
        ("agent_history", {"agent_id": "../etc"}),
        ("decisions", {"budget": 5}),
        ("no_such_tool", {}),
        ("sessions", {}),
    ]
    _, results = _call_all(demo_state, calls)
    *bad, last = results
    errors = {name: (r.is_error, _text(r)) for (name, _), r in zip(calls, bad, strict=False)}
    assert [r.is_error for r in bad] == [
        True,
        True,
        False,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
    ]
    assert "nothing to search for" in _text(bad[3])
    assert "not a date" in _text(bad[5])
    assert "no session matches" in _text(bad[6])
    assert "budget must be between" in _text(bad[8])
    assert not last.is_error and session_id in _text(last), errors


def test_no_state_answers_without_creating_any(tmp_path: Path) -> None:
    state = tmp_path / "none"
    _, results = _call_all(state, [("search", {"query": "x"}), ("sessions", {})])
    assert [r.is_error for r in results] == [False, False]
    assert "no matches" in _text(results[0])
    assert not state.exists()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(min_size=0, max_size=400), max_size=40),
    st.integers(min_value=100, max_value=2000),
)
def test_fit_never_exceeds_the_budget(lines: list[str], budget: int) -> None:
    text = fit("Header:", lines, budget)
    assert get_counter().count(text) <= budget
    assert text.startswith("Header:") or budget < 100


def _project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    project = tmp_path / "app"
    project.mkdir()
    return project, clean_env(HOME=str(tmp_path / "home"))


def test_init_registers_the_server_and_uninstall_removes_only_it(tmp_path: Path) -> None:
    project, env = _project(tmp_path)
    other = {"command": "node", "args": ["other.js"]}
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": other}, "x": 1}))
    (project / ".claude").mkdir()
    local = project / ".claude" / "settings.local.json"
    local.write_text(json.dumps({"enabledMcpjsonServers": ["other"], "model": "m"}))
    done = run_cli("init", cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    doc = json.loads((project / ".mcp.json").read_text())
    entry = doc["mcpServers"]["ctxd"]
    assert doc["mcpServers"]["other"] == other and doc["x"] == 1
    assert Path(entry["command"]).is_absolute() and entry["args"][-1] == "mcp"
    kept = json.loads(local.read_text())  # ctxd's hooks go to this file too
    assert kept["enabledMcpjsonServers"] == ["other", "ctxd"] and kept["model"] == "m"
    again = run_cli("init", cwd=project, env=env)
    assert again.returncode == 0 and ".mcp.json" not in again.stdout  # nothing to change
    gone = run_cli("init", "--uninstall", cwd=project, env=env)
    assert gone.returncode == 0, gone.stderr
    assert json.loads((project / ".mcp.json").read_text()) == {
        "mcpServers": {"other": other},
        "x": 1,
    }
    assert json.loads(local.read_text()) == {"enabledMcpjsonServers": ["other"], "model": "m"}


def test_init_keeps_a_foreign_server_named_ctxd(tmp_path: Path) -> None:
    project, env = _project(tmp_path)
    foreign = {"mcpServers": {"ctxd": {"command": "node", "args": ["mine.js"]}}}
    (project / ".mcp.json").write_text(json.dumps(foreign))
    assert run_cli("init", cwd=project, env=env).returncode == 0
    assert json.loads((project / ".mcp.json").read_text()) == foreign
    assert run_cli("init", "--uninstall", cwd=project, env=env).returncode == 0
    assert json.loads((project / ".mcp.json").read_text()) == foreign


def test_init_with_a_broken_mcp_json_is_one_line(tmp_path: Path) -> None:
    project, env = _project(tmp_path)
    (project / ".mcp.json").write_text("{not json")
    done = run_cli("init", cwd=project, env=env)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "not valid JSON" in done.stderr
    assert (project / ".mcp.json").read_text() == "{not json"
