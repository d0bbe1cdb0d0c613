"""The handoff never follows a symlink inside the state directory (task folder, accounts folder)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import hook_env, payload, run_hook

SID = "symlink-session-0001"
SECRET = "text-from-outside-the-state-dir-0042"


def _handed_over(state: Path, prompt: str) -> str:
    """What the real hook hands a subagent started by an Agent call with this prompt."""
    env = hook_env(state)
    call = payload(
        session_id=SID,
        hook_event_name="PreToolUse",
        tool_name="Agent",
        tool_use_id="toolu_sym_1",
        tool_input={"description": "d", "prompt": prompt, "subagent_type": "general-purpose"},
    )
    assert run_hook(call, env).returncode == 0
    start = payload(
        session_id=SID,
        hook_event_name="SubagentStart",
        agent_id="a00000000000000a",
        agent_type="general-purpose",
    )
    out = run_hook(start, env)
    assert out.returncode == 0
    if not out.stdout.strip():
        return ""
    return str(json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"])


def _outside(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(f'{{"role": "reviewer", "note": "{SECRET}"}}\n')
    return folder


def test_a_symlinked_task_folder_is_not_read(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _handed_over(state, "warm up")  # the hook creates the state directory
    outside = _outside(tmp_path, "context-reviewer.json")
    (state / "tasks").mkdir(mode=0o700, exist_ok=True)
    (state / "tasks" / "TASK-0001").symlink_to(outside)
    text = _handed_over(state, "Task: TASK-0001\nRole: reviewer\nReview it.")
    assert SECRET not in text


def test_a_symlinked_tasks_folder_is_not_read(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _handed_over(state, "warm up")
    outside = tmp_path / "outside-tasks"
    (outside / "TASK-0001").mkdir(parents=True)
    (outside / "TASK-0001" / "context-reviewer.json").write_text(f'{{"note": "{SECRET}"}}\n')
    (state / "tasks").symlink_to(outside)
    text = _handed_over(state, "Task: TASK-0001\nRole: reviewer\nReview it.")
    assert SECRET not in text


def test_a_symlinked_accounts_folder_is_not_read(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _handed_over(state, "warm up")
    outside = _outside(tmp_path, "arch-001.md")
    (outside / "arch-001.md").write_text(SECRET + "\n")
    (state / "handoff").mkdir(mode=0o700, exist_ok=True)
    (state / "handoff" / "agents").symlink_to(outside)
    text = _handed_over(state, "AgentId: arch-001\nAgain.")
    assert SECRET not in text


def test_a_plain_task_export_is_still_handed_over(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _handed_over(state, "warm up")
    folder = state / "tasks" / "TASK-0001"
    folder.mkdir(parents=True, mode=0o700)
    (folder / "context-reviewer.json").write_text('{"note": "the real export"}\n')
    text = _handed_over(state, "Task: TASK-0001\nRole: reviewer\nReview it.")
    assert "the real export" in text
