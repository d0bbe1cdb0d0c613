"""Codex CLI payloads in Claude Code's shapes (indexer.prepare.codex_payloads), and what a rollout adds
(indexer.prepare.codex_outcomes): exit codes and compaction summaries, read incrementally and safely."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import msgspec
import pytest
from codex_fixture import recorded_session

from indexer.models import HookPayload
from indexer.prepare import codex_outcomes
from indexer.prepare.codex_outcomes import adapt_captured, compaction_summary, exit_code, facts_of
from indexer.prepare.codex_payloads import adapt, patch_files, shell_command

_DECODE = msgspec.json.Decoder(HookPayload)


def _payload(**fields: Any) -> HookPayload:
    base = {"session_id": "s1", "cwd": "/p", "hook_event_name": "PostToolUse"}
    return _DECODE.decode(json.dumps({**base, **fields}).encode())


def _json(raw: msgspec.Raw) -> Any:
    return json.loads(bytes(raw)) if bytes(raw) else None


@pytest.mark.parametrize(
    ("code", "event", "error", "response"),
    [
        (1, "PostToolUseFailure", "Exit code 1\nFAILED test_x", None),
        (0, "PostToolUse", "", {"stdout": "FAILED test_x\n"}),
        (None, "PostToolUse", "", {"stdout": "FAILED test_x\n"}),  # no rollout: not a failure
    ],
)
def test_a_shell_result_fails_only_on_a_nonzero_exit_code(
    code: int | None, event: str, error: str, response: Any
) -> None:
    p = _payload(tool_name="Bash", tool_input={"command": "pytest"}, tool_response="FAILED test_x\n")
    out = adapt(p, code)
    assert (out.hook_event_name, out.tool_name) == (event, "Bash")
    assert (json.loads(bytes(out.error)) if error else "") == error
    assert _json(out.tool_response) == response
    assert _json(out.tool_input) == {"command": "pytest"}


def test_an_older_shell_call_with_an_argv_and_a_result_object() -> None:
    p = _payload(
        tool_name="shell",
        tool_input={"command": ["bash", "-lc", "make test"], "workdir": "/p"},
        tool_response={"output": "boom", "exit_code": 2},
    )
    out = adapt(p)
    assert out.hook_event_name == "PostToolUseFailure" and out.tool_name == "Bash"
    assert _json(out.tool_input) == {"command": "make test", "workdir": "/p"}
    assert json.loads(bytes(out.error)) == "Exit code 2\nboom"
    assert shell_command({"command": ["git", "log", "-n", "1"]}) == "git log -n 1"


def test_a_pre_tool_use_is_only_renamed() -> None:
    out = adapt(_payload(hook_event_name="PreToolUse", tool_name="exec_command",
                         tool_input={"cmd": "ls"}))  # fmt: skip
    assert out.hook_event_name == "PreToolUse" and _json(out.tool_input) == {"command": "ls"}


def test_apply_patch_names_its_files_and_fails_on_its_exit_code() -> None:
    patch = (
        "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Add File: /abs/b.md\n+z\n"
        "*** Update File: c.py\n*** Move to: d.py\n*** Delete File: e.py\n*** End Patch\n"
    )
    assert patch_files(patch, "/p") == ("/p/src/a.py", "/abs/b.md", "/p/c.py", "/p/d.py", "/p/e.py")
    ok = _payload(tool_name="apply_patch", tool_input={"command": patch},
                  tool_response="Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess.\n")  # fmt: skip
    passed = adapt(ok)
    assert passed.hook_event_name == "PostToolUse" and _json(passed.tool_input) == {"patch": patch}
    bad = _payload(tool_name="apply_patch", tool_input={"command": patch},
                   tool_response="Exit code: 1\nWall time: 0 seconds\nOutput:\nno such file\n")  # fmt: skip
    failed = adapt(bad)
    assert failed.hook_event_name == "PostToolUseFailure"
    assert json.loads(bytes(failed.error)) == "Exit code 1\nno such file"


def test_spawn_agent_is_an_agent_launched_in_the_background() -> None:
    pre = adapt(_payload(hook_event_name="PreToolUse", tool_name="spawn_agent",
                         tool_input={"message": "AgentId: rev-1\nReview"}))  # fmt: skip
    assert pre.tool_name == "Agent"
    assert _json(pre.tool_input) == {
        "prompt": "AgentId: rev-1\nReview", "subagent_type": "default", "description": "Review"
    }
    post = adapt(_payload(tool_name="spawn_agent", tool_input={"message": "x"},
                          tool_response='{"agent_id":"01a2-b","nickname":"Boole"}'))  # fmt: skip
    assert _json(post.tool_response) == {"status": "async_launched", "agentId": "01a2-b"}


def test_update_plan_is_a_todo_list() -> None:
    plan = {"plan": [{"step": "Fix it", "status": "completed"}, {"step": "Doc", "status": "pending"}]}
    out = adapt(_payload(tool_name="update_plan", tool_input=plan))
    assert out.tool_name == "TodoWrite"
    assert _json(out.tool_input) == {
        "todos": [
            {"content": "Fix it", "status": "completed", "activeForm": "Fix it"},
            {"content": "Doc", "status": "pending", "activeForm": "Doc"},
        ]
    }


def test_a_subagents_prompt_is_not_the_users() -> None:
    prompt = _payload(hook_event_name="UserPromptSubmit", prompt="AgentId: r\nGo")
    assert adapt(prompt) is prompt
    task = _payload(hook_event_name="UserPromptSubmit", prompt="Go", agent_id="01a2", agent_type="default")
    assert adapt(task).hook_event_name == "SubagentPrompt"


def test_other_payloads_are_left_alone() -> None:
    for p in (_payload(hook_event_name="Stop", last_assistant_message="done"),
              _payload(tool_name="mcp__db__query", tool_input={"q": 1}, tool_response="x")):  # fmt: skip
        assert adapt(p) is p


# --- the rollout: exit codes and compaction summaries ----------------------------------------


def test_the_recorded_rollout_gives_every_exit_code_and_the_summary(tmp_path: Path) -> None:
    session = recorded_session(tmp_path)
    main = str(session.main_rollout())
    calls = {
        p["tool_response"].split("\n")[0]: p["tool_use_id"]
        for p in session.payloads
        if p["hook_event_name"] == "PostToolUse" and p["tool_name"] == "Bash" and "agent_id" not in p
    }
    assert {line: exit_code(main, cid) for line, cid in calls.items()} == {
        "FAILED tests/test_export.py::test_header - KeyError: total": 1,
        "1 passed": 0,
        "lint: E501": 2,
    }
    post_compact = next(p for p in session.payloads if p["hook_event_name"] == "PostCompact")
    now_ns = os.stat(main).st_mtime_ns
    assert compaction_summary(main, now_ns) == "SUMMARY: export fix in progress."
    adapted = adapt_captured(_DECODE.decode(json.dumps(post_compact).encode()), now_ns)
    assert adapted.compact_summary == "SUMMARY: export fix in progress."
    assert compaction_summary(main, 0) == ""  # none recorded that early


def _record(call_id: str, code: int) -> bytes:
    item = {"type": "CommandExecution", "id": call_id, "exit_code": code, "status": "failed"}
    rec = {"timestamp": "2026-12-01T00:00:00Z", "type": "event_msg",
           "payload": {"type": "item_completed", "item": item}}  # fmt: skip
    return json.dumps(rec).encode() + b"\n"


def test_a_rollout_is_read_again_only_from_where_it_was_left(tmp_path: Path) -> None:
    path = tmp_path / "rollout-2026-12-01T00-00-00-abc.jsonl"
    path.write_bytes(_record("c1", 1) + _record("c2", 0)[:30])  # c2 still being written
    assert exit_code(str(path), "c1") == 1
    assert exit_code(str(path), "c2") is None
    offset = facts_of(str(path)).offset  # type: ignore[union-attr]
    assert offset == len(_record("c1", 1))
    with path.open("ab") as f:
        f.write(_record("c2", 0)[30:] + _record("c3", 3))
    assert (exit_code(str(path), "c2"), exit_code(str(path), "c3")) == (0, 3)
    # Replaced by another file (a new inode): read from its start again.
    other = tmp_path / "other"
    other.write_bytes(_record("c1", 7))
    os.replace(other, path)
    assert exit_code(str(path), "c1") == 7 and exit_code(str(path), "c3") is None


def test_only_a_regular_rollout_file_is_read(tmp_path: Path) -> None:
    real = tmp_path / "rollout-x.jsonl"
    real.write_bytes(_record("c1", 1))
    (tmp_path / "rollout-link.jsonl").symlink_to(real)
    (tmp_path / "secrets.txt").write_bytes(_record("c1", 1))
    os.mkfifo(tmp_path / "rollout-fifo.jsonl")
    codex_outcomes._CACHE.clear()
    assert exit_code(str(real), "c1") == 1
    for name in ("rollout-link.jsonl", "secrets.txt", "rollout-fifo.jsonl", "rollout-none.jsonl"):
        assert facts_of(str(tmp_path / name)) is None, name
