"""Attribution does not depend on what the writer's cache held: a restart, or a session dropped
from the cache and read again, attributes later events as one uninterrupted pass does.

Each scenario is spooled once and indexed three ways: in one pass, in two passes with a new
writer between them (a restart), and in one pass whose cache is dropped after every batch.
The agent of every entry must be the same each time, and the one the scenario expects.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_views import base, in_agent, make_state, on_disk, render, spool, task_done, task_start

from indexer.config import Config, IngestConfig
from indexer.ingest import attribution
from indexer.paths import StatePaths
from indexer.writer.catch_up import open_writer, writer_lock


def task_call(tool_use_id: str, agent_type: str, prompt: str) -> dict[str, Any]:
    return base(
        "PreToolUse",
        tool_name="Agent",
        tool_use_id=tool_use_id,
        tool_input={"prompt": prompt, "subagent_type": agent_type, "description": prompt[:20]},
    )


def interrupted(tool_use_id: str, agent_type: str, prompt: str) -> dict[str, Any]:
    failed = task_call(tool_use_id, agent_type, prompt)
    return {**failed, "hook_event_name": "PostToolUseFailure", "error": "interrupted"}


def index(paths: StatePaths, parts: list[list[dict[str, Any]]], how: str) -> dict[str, str]:
    """Spool and index `parts`; return the agent of each tool event by tool_use_id."""
    if how == "one pass":
        spool(paths, *[p for part in parts for p in part])
        _pass(paths)
    elif how == "restart between parts":
        for part in parts:
            spool(paths, *part)
            _pass(paths)
    else:  # the cache dropped after every batch of one line
        spool(paths, *[p for part in parts for p in part])
        _pass(paths, batch_lines=1, shed=True)
    import sqlite3

    conn = sqlite3.connect(paths.index_db)
    try:
        rows = conn.execute("SELECT tool_use_id, hook_event, agent_id FROM entries").fetchall()
    finally:
        conn.close()
    return {f"{tid}/{hook}": agent for tid, hook, agent in rows if tid}


def _pass(paths: StatePaths, batch_lines: int = 2000, shed: bool = False) -> None:
    with writer_lock(paths):
        writer = open_writer(paths, Config(ingest=IngestConfig(batch_lines=batch_lines)))
        try:
            writer.start()
            if shed:
                registry = writer.ingestor.registry
                write_views = writer.ingestor.on_batch
                assert write_views is not None

                def then_shed(batch: Any) -> None:
                    write_views(batch)
                    registry.shed(max_sessions=0)

                writer.ingestor.on_batch = then_shed
            writer.pass_once()
        finally:
            writer.close()


HOW = ["one pass", "restart between parts", "cache dropped after each batch"]


@pytest.mark.parametrize("how", HOW)
def test_an_agent_interrupted_before_it_ran_gets_no_later_agents_events(
    tmp_path: Path, how: str
) -> None:
    # The first Agent call fails before its subagent starts: no Claude Code id ever names
    # it. A later subagent of the same type is the only one its id can belong to (it is
    # interrupted too, so no result names it afterwards).
    paths = make_state(tmp_path)
    parts = [
        [
            task_call("toolu_t1", "coder", "Build the API"),
            interrupted("toolu_t1", "coder", "Build the API"),
        ],
        [
            task_start("toolu_t2", "beta", "coder", "Build the UI"),
            base("SubagentStart", agent_id="cc-b", agent_type="coder"),
            in_agent("cc-b", "coder", "toolu_e1", "/app/ui.tsx"),
            interrupted("toolu_t2", "coder", "AgentId: beta\nBuild the UI"),
        ],
    ]
    agents = index(paths, parts, how)
    assert agents["toolu_e1/PreToolUse"] == "beta"
    assert on_disk(paths) == render(paths)


@pytest.mark.parametrize("how", HOW)
def test_parallel_agents_linked_out_of_order_resolve_alike(tmp_path: Path, how: str) -> None:
    # Three agents of one type; Claude Code's ids arrive in another order than the calls, and
    # a result corrects a guess while another agent still waits for its id.
    paths = make_state(tmp_path)
    parts = [
        [
            task_start("toolu_ta", "alpha", "coder", "A"),
            task_start("toolu_tb", "beta", "coder", "B"),
            task_start("toolu_tc", "gamma", "coder", "C"),
            base("SubagentStart", agent_id="cc-c", agent_type="coder"),
            in_agent("cc-c", "coder", "toolu_c1", "/c"),
        ],
        [
            task_done("toolu_tc", "gamma", "coder", "cc-c", "C done"),
            base("SubagentStart", agent_id="cc-b", agent_type="coder"),
            in_agent("cc-b", "coder", "toolu_b1", "/b"),
        ],
        [
            base("SubagentStart", agent_id="cc-a", agent_type="coder"),
            in_agent("cc-a", "coder", "toolu_a1", "/a"),
            task_done("toolu_tb", "beta", "coder", "cc-b", "B done"),
            task_done("toolu_ta", "alpha", "coder", "cc-a", "A done"),
        ],
    ]
    agents = index(paths, parts, how)
    assert (agents["toolu_a1/PreToolUse"], agents["toolu_b1/PreToolUse"]) == ("alpha", "beta")
    assert agents["toolu_c1/PreToolUse"] == "gamma"
    assert on_disk(paths) == render(paths)


def test_a_session_read_back_from_the_index_equals_the_one_in_the_cache(tmp_path: Path) -> None:
    # Every Agent call of an agent, not only its last (one AgentId used by two calls), comes
    # back with the session.
    paths = make_state(tmp_path)
    spool(
        paths,
        task_start("toolu_t1", "rev", "coder", "Review the API"),
        task_start("toolu_t2", "rev", "coder", "Review the UI"),
        task_call("toolu_t3", "coder", "Explore the repo"),
        interrupted("toolu_t3", "coder", "Explore the repo"),
        base("SubagentStart", agent_id="cc-r", agent_type="coder"),
    )
    with writer_lock(paths):
        writer = open_writer(paths, Config())
        try:
            writer.start()
            writer.pass_once()
            cached = writer.ingestor.registry._sessions
            fresh = attribution.AgentRegistry(writer.conn)
            for session_id, s in cached.items():
                again = fresh._session(session_id)
                assert again.by_tool == s.by_tool
                assert again.aliases == s.aliases
                assert {k: json.dumps(vars_of(r)) for k, r in again.agents.items()} == {
                    k: json.dumps(vars_of(r)) for k, r in s.agents.items()
                }
        finally:
            writer.close()


def vars_of(row: attribution.AgentRow) -> dict[str, Any]:
    return {name: getattr(row, name) for name in row.__slots__}  # type: ignore[attr-defined]
