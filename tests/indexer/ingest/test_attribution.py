"""Agent attribution edge cases: calls without tool_use_id, ids seen before their Agent call."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from ctxd_hook.hook import run
from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up

SESSION = "attr-session"


def _spool(state: Path, *payloads: dict[str, object]) -> None:
    for p in payloads:
        run(json.dumps({"session_id": SESSION, **p}).encode(), {"CTXD_HOME": str(state)}, "/")


def _agents(state: Path) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(state / "index.db")
    try:
        return conn.execute(
            "SELECT agent_id, status, cc_agent_id FROM agents ORDER BY started_ns"
        ).fetchall()
    finally:
        conn.close()


def test_an_old_task_call_without_tool_use_id_is_one_agent(tmp_path: Path) -> None:
    # Claude Code 1.0.x sent no tool_use_id: the result must still close the call it belongs to.
    call = {
        "tool_name": "Task",
        "tool_input": {
            "description": "Audit hooks",
            "prompt": "Audit",
            "subagent_type": "general-purpose",
        },
    }
    _spool(
        tmp_path,
        {"hook_event_name": "PreToolUse", **call},
        {
            "hook_event_name": "PostToolUse",
            **call,
            "tool_response": {"content": [{"type": "text", "text": "Done."}]},
        },
        {"hook_event_name": "PreToolUse", **call},  # the same prompt again: a new instance
    )
    catch_up(StatePaths(tmp_path))
    agents = _agents(tmp_path)
    assert [status for _, status, _ in agents] == ["completed", "running"]
    assert agents[0][0] != agents[1][0]


def test_an_id_seen_before_its_agent_call_leaves_no_orphan(tmp_path: Path) -> None:
    # The subagent's own events arrive first (no Agent PreToolUse yet), then the Agent result
    # names it: one agent remains, holding every entry, and no empty view is left behind.
    _spool(
        tmp_path,
        {"hook_event_name": "SubagentStart", "agent_id": "a0f1e2d3c4b5a697", "agent_type": "Plan"},
    )
    catch_up(StatePaths(tmp_path))
    assert [a for a, _, _ in _agents(tmp_path)] == ["a0f1e2d3c4b5a697"]
    _spool(
        tmp_path,
        {
            "hook_event_name": "PreToolUse",
            "tool_name": "Agent",
            "tool_use_id": "toolu_1",
            "tool_input": {
                "description": "Plan it",
                "prompt": "AgentId: planner-1\nPlan it",
                "subagent_type": "Plan",
            },
        },
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "Agent",
            "tool_use_id": "toolu_1",
            "tool_input": {
                "description": "Plan it",
                "prompt": "AgentId: planner-1\nPlan it",
                "subagent_type": "Plan",
            },
            "tool_response": {
                "status": "completed",
                "agentId": "a0f1e2d3c4b5a697",
                "content": [{"type": "text", "text": "Planned."}],
            },
        },
    )
    catch_up(StatePaths(tmp_path))
    assert _agents(tmp_path) == [("planner-1", "completed", "a0f1e2d3c4b5a697")]
    views = sorted(p.name for p in (tmp_path / "sessions" / SESSION).glob("*.jsonl"))
    assert views == ["agent-instructions.jsonl", "planner-1.jsonl"]
    lines = (tmp_path / "sessions" / SESSION / "planner-1.jsonl").read_text().splitlines()
    assert [json.loads(line)["event"] for line in lines] == [
        "subagent_start",
        "agent_start",
        "agent_complete",
    ]
