"""`ctxd forget` also deletes what the page and the handoff kept of a forgotten session."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import hook_env, payload, run_cli, run_hook

from summarizer.cli.commands.demo_session import DEMO_SESSION_ID, demo_session


def test_forget_removes_page_queue_and_the_accounts_it_told_of(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = hook_env(state)
    # arch-001 ran first in another session: its account must come back from that run.
    other = "older-session-01"
    call = {"description": "d", "prompt": "AgentId: arch-001\nOlder job.", "subagent_type": "Plan"}
    done = {"status": "completed", "content": [{"type": "text", "text": "Older outcome."}]}
    common = {"session_id": other, "tool_name": "Agent", "tool_use_id": "toolu_o1"}
    for event in (
        payload(hook_event_name="PreToolUse", tool_input=call, **common),
        payload(hook_event_name="PostToolUse", tool_input=call, tool_response=done, **common),
    ):
        assert run_hook(event, env).returncode == 0
    for event in demo_session(str(tmp_path / "proj"))[:-1]:  # then the demo session
        assert run_hook(json.dumps(event).encode(), env).returncode == 0
    assert run_cli("view", DEMO_SESSION_ID, state_dir=state).returncode == 0
    page = state / "pages" / f"{DEMO_SESSION_ID}.html"
    account = state / "handoff" / "agents" / "arch-001.md"
    queue = state / "handoff" / "sessions" / DEMO_SESSION_ID
    assert page.exists() and queue.is_dir()
    assert "stream rows with the stdlib csv module" in account.read_text()

    out = run_cli("forget", DEMO_SESSION_ID, state_dir=state)
    assert out.returncode == 0, out.stderr
    assert not page.exists() and not queue.exists()
    text = account.read_text()
    assert "stream rows" not in text and "Older outcome." in text  # rewritten from what stays
