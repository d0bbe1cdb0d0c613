"""The hand-back on the real client's event order: the compaction is not an agent, ids as users
see them, one current copy of the notes, never silent (real hook, real CLI, real index)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import hook_env, query, run_cli, run_hook

SID = "4a5be60a-1b2d-4c3e-9f40-5a6b7c8d9e01"
COMPACT_TEXT = (
    "<analysis>\nLet me chronologically analyze the conversation.\n</analysis>\n\n"
    "<summary>\n1. Primary Request and Intent:\n   Fix the CSV export.\n</summary>"
)


def event(project: Path, name: str, session_id: str = SID, **extra: Any) -> bytes:
    """A payload as Claude Code 2.1.330 sends it (compact JSON, common fields first)."""
    base: dict[str, Any] = {
        "session_id": session_id,
        "transcript_path": str(project / f"{session_id}.jsonl"),
        "cwd": str(project),
        "permission_mode": "bypassPermissions",
        "hook_event_name": name,
    }
    base.update(extra)
    return json.dumps(base, separators=(",", ":")).encode()


def feed(state: Path, project: Path, payloads: list[bytes]) -> list[str]:
    """Run the real hook for each payload; return what it printed."""
    env = hook_env(state)
    out = []
    for p in payloads:
        done = run_hook(p, env, cwd=project)
        assert done.returncode == 0, done.stderr
        out.append(done.stdout.decode())
    return out


def agent_call(project: Path, tool_use_id: str, prompt: str, *, cc_id: str = "") -> list[bytes]:
    """PreToolUse of the Agent tool, then SubagentStart (Claude Code's id, no tool_use_id)."""
    tool_input = {
        "description": "look around",
        "prompt": prompt,
        "subagent_type": "general-purpose",
    }
    calls = [
        event(
            project, "PreToolUse", tool_name="Agent", tool_input=tool_input, tool_use_id=tool_use_id
        ),
    ]
    if cc_id:
        calls.append(event(project, "SubagentStart", agent_id=cc_id, agent_type="general-purpose"))
    return calls


def test_compaction_stop_is_the_session_summary_not_an_agent(tmp_path: Path) -> None:
    state, project = tmp_path / "state", tmp_path / "proj"
    project.mkdir()
    feed(
        state,
        project,
        [
            event(project, "UserPromptSubmit", prompt="fix the csv export"),
            # A background agent is still running when the conversation is compacted.
            *agent_call(project, "toolu_bg", "AgentId: scout-1\nlook at the export", cc_id="a11aa"),
            event(project, "PreCompact", trigger="auto", custom_instructions=""),
            event(
                project,
                "SubagentStop",
                agent_id="a9f45c753bf19d6f2",
                agent_type="",
                stop_hook_active=False,
                last_assistant_message=COMPACT_TEXT,
            ),
            event(project, "PostCompact", trigger="auto", compact_summary=COMPACT_TEXT),
        ],
    )
    done = run_cli("ingest", state_dir=state)
    assert done.returncode == 0, done.stderr
    agents = query(state, "SELECT agent_id, status FROM agents WHERE session_id=?", (SID,))
    assert agents == [("scout-1", "running")]
    rows = query(state, "SELECT agent_id, event FROM entries WHERE hook_event='SubagentStop'")
    assert rows == [("main", "compact_summary")]
    assert not (state / "sessions" / SID / "a9f45c753bf19d6f2.jsonl").exists()


def _two_agents(tmp_path: Path) -> tuple[Path, Path]:
    """A session with an `AgentId:` agent and one named by ctxd's fallback, both finished."""
    state, project = tmp_path / "state", tmp_path / "proj"
    project.mkdir()
    done_named = {
        "status": "completed",
        "agentId": "a11aa",
        "content": [{"type": "text", "text": "ok"}],
    }
    done_anon = {
        "status": "completed",
        "agentId": "a22bb",
        "content": [{"type": "text", "text": "ok"}],
    }
    feed(
        state,
        project,
        [
            event(project, "UserPromptSubmit", prompt="look around"),
            *agent_call(project, "toolu_1", "AgentId: scout-1\nlook at the export", cc_id="a11aa"),
            event(
                project,
                "PreToolUse",
                tool_name="Read",
                tool_input={"file_path": "/x/a.py"},
                tool_use_id="toolu_r1",
                agent_id="a11aa",
                agent_type="general-purpose",
            ),
            event(
                project,
                "PostToolUse",
                tool_name="Agent",
                tool_use_id="toolu_1",
                tool_input={"prompt": "AgentId: scout-1\nlook", "subagent_type": "general-purpose"},
                tool_response=done_named,
            ),
            *agent_call(project, "toolu_2", "list the tests", cc_id="a22bb"),
            event(
                project,
                "PreToolUse",
                tool_name="Glob",
                tool_input={"pattern": "tests/*.py"},
                tool_use_id="toolu_g1",
                agent_id="a22bb",
                agent_type="general-purpose",
            ),
            event(
                project,
                "PostToolUse",
                tool_name="Agent",
                tool_use_id="toolu_2",
                tool_input={"prompt": "list the tests", "subagent_type": "general-purpose"},
                tool_response=done_anon,
            ),
        ],
    )
    assert run_cli("ingest", state_dir=state).returncode == 0
    return state, project


def read_entries(state: Path, *args: str) -> list[dict[str, Any]]:
    done = run_cli("read", *args, state_dir=state)
    assert done.returncode == 0, done.stderr
    entries: list[dict[str, Any]] = json.loads(done.stdout)["entries"]
    return entries


def test_read_accepts_every_id_an_agent_is_known_by(tmp_path: Path) -> None:
    state, _ = _two_agents(tmp_path)
    (generated,) = [
        r[0] for r in query(state, "SELECT agent_id FROM agents WHERE cc_agent_id='a22bb'")
    ]
    assert generated.startswith("general-purpose-")
    by_generated = read_entries(state, "--agent-id", generated)
    assert by_generated and {e["agent_id"] for e in by_generated} == {generated}
    assert read_entries(state, "--agent-id", "a22bb") == by_generated
    assert read_entries(state, "--agent-id", "a22bb", "--session", SID) == by_generated
    by_name = read_entries(state, "--agent-id", "scout-1")
    assert by_name and read_entries(state, "--agent-id", "a11aa") == by_name


def test_read_session_accepts_the_prefix_and_stamp_sessions_prints(tmp_path: Path) -> None:
    state, _ = _two_agents(tmp_path)
    full = read_entries(state, "--agent-id", "main", "--session", SID)
    assert full
    assert read_entries(state, "--agent-id", "main", "--session", SID[:8]) == full
    (stamp,) = [
        line.split()[0]
        for line in run_cli("sessions", state_dir=state).stdout.splitlines()
        if SID[:8] in line
    ]
    assert read_entries(state, "--agent-id", "main", "--session", stamp) == full


def test_read_unknown_or_ambiguous_session_is_a_one_line_error(tmp_path: Path) -> None:
    state, project = _two_agents(tmp_path)
    other = "4a5be60b-0000-4000-8000-000000000000"
    feed(state, project, [event(project, "UserPromptSubmit", session_id=other, prompt="hi")])
    for ref, words in (("4a5be6", "matches 2 sessions"), ("ffff", "no session matches")):
        done = run_cli("read", "--agent-id", "main", "--session", ref, state_dir=state)
        assert done.returncode != 0
        assert done.stdout == "" and len(done.stderr.splitlines()) == 1
        assert words in done.stderr
