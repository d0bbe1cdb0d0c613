"""A FIFO where a handoff marker should be never hangs SubagentStart (the subagent waits on it)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from helpers import hook_env, payload, run_hook

SID = "fifo-session-0001"


def test_a_fifo_marker_is_skipped(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = hook_env(state)
    warm = payload(session_id=SID, hook_event_name="UserPromptSubmit", prompt="hi")
    assert run_hook(warm, env).returncode == 0
    queue = state / "handoff" / "sessions" / SID
    queue.mkdir(parents=True, mode=0o700)
    os.mkfifo(queue / f"p-{time.time_ns():020d}-1.json", 0o600)
    start = payload(
        session_id=SID, hook_event_name="SubagentStart", agent_id="a0000000000000fe",
        agent_type="general-purpose",
    )
    out = run_hook(start, env)  # run_hook's own timeout turns a hang into a failure
    assert out.returncode == 0 and out.stdout == b""


def test_a_fifo_config_does_not_hang_an_agent_call(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = hook_env(state)
    warm = payload(session_id=SID, hook_event_name="UserPromptSubmit", prompt="hi")
    assert run_hook(warm, env).returncode == 0
    os.mkfifo(state / "config.toml", 0o600)
    call = payload(
        session_id=SID, hook_event_name="PreToolUse", tool_name="Agent", tool_use_id="toolu_f1",
        tool_input={"description": "d", "prompt": "AgentId: fifo-001\ngo",
                    "subagent_type": "general-purpose"},
    )
    out = run_hook(call, env)  # run_hook's own timeout turns a hang into a failure
    assert out.returncode == 0 and out.stdout == b""
    assert list((state / "handoff" / "sessions" / SID).glob("p-*.json"))  # queued all the same
