"""A secret in any stored field never leaves the spool: the index and every view are redacted.

Each case sends one real hook payload (through the real hook script) with an AWS key in one
field, runs `ctxd ingest` (which also writes the views) and then reads every byte outside the
spool: the key must be gone everywhere, and the expected column must hold the redaction tag
(so the test cannot pass because the field was simply not stored).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import hook_env, payload, query, run_cli, run_hook

KEY = "AKIAZ7QWERTY4UIOP2XC"
TAG = "[REDACTED:aws-access-key]"
SUBAGENT = {"agent_id": "a1b2c3d4e5f6a7b8c", "agent_type": "Explore"}


def _agent_call(tool: str, **extra: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_use_id": "toolu_01AgentCall000000000001",
        "tool_input": {
            "description": "Deploy the stack",
            "prompt": f"Deploy with AWS_ACCESS_KEY_ID {KEY} and report back",
            "subagent_type": "general-purpose",
        },
        **extra,
    }


# (case, payload fields, the entries column that must carry the tag)
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("agent-prompt", _agent_call("Agent"), "instruction"),
    ("task-prompt", _agent_call("Task"), "instruction"),
    ("agent-prompt-in-a-subagent", _agent_call("Agent", **SUBAGENT), "instruction"),
    (
        "agent-result",
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "Agent",
            "tool_use_id": "toolu_01AgentCall000000000002",
            "tool_input": {"description": "Look up", "prompt": "find the key"},
            "tool_response": {
                "status": "completed",
                "content": [{"type": "text", "text": f"The key is {KEY}."}],
            },
        },
        "output_summary",
    ),
    (
        "bash-description",
        {
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_use_id": "toolu_01Bash00000000000000001",
            "tool_input": {"command": "aws s3 ls", "description": f"List with {KEY}"},
        },
        "description",
    ),
    (
        "bash-output",
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_use_id": "toolu_01Bash00000000000000002",
            "tool_input": {"command": "env", "description": "Show env"},
            "tool_response": {"stdout": f"AWS_KEY={KEY}\n", "stderr": "", "interrupted": False},
        },
        "output_summary",
    ),
    (
        "tool-error",
        {
            "hook_event_name": "PostToolUseFailure",
            "tool_name": "Bash",
            "tool_use_id": "toolu_01Bash00000000000000003",
            "tool_input": {"command": "deploy", "description": "Deploy"},
            "error": f"denied for {KEY}",
        },
        "error",
    ),
    (
        "read-path",
        {
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_use_id": "toolu_01Read00000000000000001",
            "tool_input": {"file_path": f"/home/dev/keys/{KEY}.txt"},
        },
        "files",
    ),
    ("prompt", {"hook_event_name": "UserPromptSubmit", "prompt": f"use {KEY} now"}, "text"),
    (
        "subagent-stop",
        {
            "hook_event_name": "SubagentStop",
            **SUBAGENT,
            "stop_hook_active": False,
            "last_assistant_message": f"Done; the key was {KEY}.",
        },
        "text",
    ),
    ("cwd", {"hook_event_name": "Notification", "message": "hi", "cwd": f"/srv/{KEY}"}, "cwd"),
]


def _files_with_key(state_dir: Path) -> list[str]:
    """Every file of the state directory, outside the spool, whose bytes hold the key."""
    return [
        str(path.relative_to(state_dir))
        for path in sorted(state_dir.rglob("*"))
        if path.is_file()
        and "spool" not in path.relative_to(state_dir).parts
        and KEY.encode() in path.read_bytes()
    ]


@pytest.mark.parametrize(("fields", "column"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_secret_in_a_stored_field_is_redacted_everywhere(
    tmp_path: Path, fields: dict[str, Any], column: str
) -> None:
    state = tmp_path / "state"
    assert run_hook(payload(**fields), hook_env(state)).returncode == 0
    spool = b"".join(p.read_bytes() for p in sorted((state / "spool").glob("*.jsonl")))
    assert KEY.encode() in spool  # the spool holds the raw payload: redaction is the indexer's
    done = run_cli("ingest", state_dir=state)
    assert done.returncode == 0, done.stderr
    assert "indexed 1 entries" in done.stdout
    [(value,)] = query(state, f"SELECT {column} FROM entries")
    assert TAG in str(value)
    assert _files_with_key(state) == []


def test_agent_instruction_view_carries_the_redacted_prompt(tmp_path: Path) -> None:
    """The per-agent instruction views keep the prompt, with the key replaced by its tag."""
    state = tmp_path / "state"
    assert run_hook(payload(**_agent_call("Agent")), hook_env(state)).returncode == 0
    assert run_cli("ingest", state_dir=state).returncode == 0
    views = sorted((state / "sessions").rglob("*agent-instructions.jsonl"))
    assert len(views) == 2  # the session's and the all-sessions view
    for view in views:
        text = view.read_text()
        assert f"Deploy with AWS_ACCESS_KEY_ID {TAG} and report back" in text
    assert _files_with_key(state) == []
