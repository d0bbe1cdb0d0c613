"""indexer/prepare/normalize.py: event kinds, descriptions, files, clipping and detail of each payload."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from indexer.models import Entry, HookPayload
from indexer.prepare.normalize import PayloadError, bounded_raw, clip, error_text, normalize


def _norm(payload: dict[str, Any], max_text_chars: int = 16000, max_detail: int = 4096) -> Entry:
    p = msgspec.json.decode(json.dumps(payload).encode(), type=HookPayload)
    return normalize(
        p,
        ts_ns=123,
        pid=45,
        file_id=6,
        offset=789,
        line_no=10,
        max_text_chars=max_text_chars,
        max_detail_bytes=max_detail,
    )


BASE = {"session_id": "s1", "cwd": "/proj"}


def test_source_position_and_identity_are_kept() -> None:
    e = _norm({**BASE, "hook_event_name": "Stop", "last_assistant_message": "done"})
    assert (e.file_id, e.offset, e.line_no, e.ts_ns, e.pid) == (6, 789, 10, 123, 45)
    assert (e.session_id, e.hook_event, e.cwd) == ("s1", "Stop", "/proj")
    assert e.agent_id == "main"  # attribution sets it later


@pytest.mark.parametrize(
    ("payload", "kind"),
    [
        ({"hook_event_name": "SessionStart", "source": "startup"}, "session_start"),
        ({"hook_event_name": "SessionEnd"}, "session_end"),
        ({"hook_event_name": "UserPromptSubmit", "prompt": "hi"}, "prompt"),
        ({"hook_event_name": "Stop"}, "stop"),
        ({"hook_event_name": "SubagentStop", "agent_id": "a1", "agent_type": "x"}, "subagent_stop"),
        ({"hook_event_name": "SubagentStop", "agent_id": "a1"}, "fork_stop"),
        (
            {
                "hook_event_name": "SubagentStop",
                "agent_id": "a1",
                "last_assistant_message": "<summary>s</summary>",
            },
            "compact_summary",
        ),
        ({"hook_event_name": "PreCompact"}, "pre_compact"),
        ({"hook_event_name": "PostCompact"}, "post_compact"),
        ({"hook_event_name": "Notification"}, "notification"),
        ({"hook_event_name": "TaskCompleted"}, "task_completed"),
        ({"hook_event_name": "PreToolUse", "tool_name": "Read"}, "tool_use"),
        ({"hook_event_name": "PreToolUse", "tool_name": "Agent"}, "agent_start"),
        ({"hook_event_name": "PreToolUse", "tool_name": "Task"}, "agent_start"),
        ({"hook_event_name": "PostToolUse", "tool_name": "Bash"}, "tool_result"),
        ({"hook_event_name": "PostToolUse", "tool_name": "Agent"}, "agent_complete"),
        (
            {
                "hook_event_name": "PostToolUse",
                "tool_name": "Agent",
                "tool_response": {"status": "async_launched", "agentId": "ag9"},
            },
            "agent_launched",
        ),
        ({"hook_event_name": "PostToolUseFailure", "tool_name": "Agent"}, "agent_failed"),
        ({"hook_event_name": "PostToolUseFailure", "tool_name": "Bash"}, "tool_failure"),
        ({"hook_event_name": "SomethingNew"}, "other"),
    ],
)
def test_event_kinds(payload: dict[str, Any], kind: str) -> None:
    assert _norm({**BASE, **payload}).event == kind


def test_missing_session_or_event_is_a_payload_error() -> None:
    with pytest.raises(PayloadError, match="session_id"):
        _norm({"hook_event_name": "Stop"})
    with pytest.raises(PayloadError, match="hook_event_name"):
        _norm({"session_id": "s1"})


def test_file_tool_records_its_file_and_description() -> None:
    e = _norm(
        {
            **BASE,
            "hook_event_name": "PreToolUse",
            "tool_name": "Edit",
            "tool_use_id": "tu1",
            "tool_input": {"file_path": "/proj/a.py", "old_string": "x", "new_string": "y"},
        }
    )
    assert e.files == ("/proj/a.py",)
    assert e.description == "Edit /proj/a.py"
    assert e.tool_use_id == "tu1"
    assert json.loads(bytes(e.detail)) == {
        "input": {"file_path": "/proj/a.py", "old_string": "x", "new_string": "y"}
    }


def test_non_file_tools_touch_no_file_and_a_given_description_wins() -> None:
    e = _norm(
        {
            **BASE,
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls -la", "description": "List files"},
        }
    )
    assert e.files == ()
    assert e.description == "List files"
    e = _norm({**BASE, "hook_event_name": "PreToolUse", "tool_name": "Grep",
               "tool_input": {"pattern": "TODO", "path": "src"}})  # fmt: skip
    assert e.description == "Grep TODO"
    e = _norm({**BASE, "hook_event_name": "PreToolUse", "tool_name": "TodoWrite",
               "tool_input": "not an object"})  # fmt: skip
    assert e.description == "TodoWrite"


def test_bash_output_and_interruption() -> None:
    e = _norm(
        {
            **BASE,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "make"},
            "tool_response": {"stdout": "", "stderr": "boom", "interrupted": True},
        }
    )
    assert e.output_summary == "boom"
    assert e.error == "interrupted"


def test_agent_call_is_about_the_agent_it_starts() -> None:
    e = _norm(
        {
            **BASE,
            "hook_event_name": "PostToolUse",
            "tool_name": "Agent",
            "agent_type": "caller-type",
            "tool_input": {"prompt": "Do the thing", "description": "Thing",
                           "subagent_type": "Explore"},
            "tool_response": {"status": "completed", "agentId": "ag1",
                              "content": [{"type": "text", "text": "line1"},
                                          {"type": "text", "text": "line2"}]},
        }
    )  # fmt: skip
    assert e.agent_type == "Explore"
    assert e.cc_agent_id == "ag1"
    assert e.instruction == "Do the thing"
    assert e.output_summary == "line1\nline2"
    assert e.description == "Thing"
    e = _norm({**BASE, "hook_event_name": "PreToolUse", "tool_name": "Agent",
               "tool_input": {"prompt": "p"}})  # fmt: skip
    assert e.agent_type == "general-purpose"


def test_a_fork_stop_belongs_to_main_not_to_its_agent_id() -> None:
    e = _norm({**BASE, "hook_event_name": "SubagentStop", "agent_id": "fork1",
               "last_assistant_message": "<summary>all</summary>"})  # fmt: skip
    assert e.cc_agent_id == ""
    assert e.description == "compaction summary"
    e = _norm({**BASE, "hook_event_name": "SubagentStop", "agent_id": "sub1",
               "agent_type": "Explore", "last_assistant_message": "Found it\nmore"})  # fmt: skip
    assert e.cc_agent_id == "sub1"
    assert e.description == "Found it"
    assert e.text == "Found it\nmore"


def test_failure_error_text() -> None:
    e = _norm({**BASE, "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
               "tool_input": {"command": "x"}, "error": "exit 2"})  # fmt: skip
    assert e.error == "exit 2"
    e = _norm({**BASE, "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
               "tool_input": {"command": "x"}, "is_interrupt": True})  # fmt: skip
    assert e.error == "interrupted"
    e = _norm({**BASE, "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
               "error": "e" * 5000})  # fmt: skip
    assert e.error == "e" * 3986 + " …[truncated]"  # at most 4000 characters, marked


def test_prompt_description_is_its_first_line_and_text_is_clipped() -> None:
    e = _norm({**BASE, "hook_event_name": "UserPromptSubmit",
               "prompt": "  Fix the bug\nin detail " + "z" * 100}, max_text_chars=50)  # fmt: skip
    assert e.description == "Fix the bug"
    assert e.text == "  Fix the bug\nin detail " + "z" * 12 + " …[truncated]"


@pytest.mark.parametrize(
    ("payload", "description"),
    [
        ({"hook_event_name": "SessionStart", "source": "compact"}, "session compact"),
        ({"hook_event_name": "SessionStart"}, "session start"),
        ({"hook_event_name": "SessionEnd", "reason": "clear"}, "session end (clear)"),
        ({"hook_event_name": "SessionEnd"}, "session end (unknown)"),
        ({"hook_event_name": "PreCompact", "trigger": "auto"}, "compaction requested (auto)"),
        ({"hook_event_name": "PostCompact", "trigger": "manual"}, "compaction (manual)"),
        ({"hook_event_name": "SubagentStart", "agent_type": "Plan"}, "subagent started (Plan)"),
        ({"hook_event_name": "SubagentStart"}, "subagent started (agent)"),
        ({"hook_event_name": "Stop"}, "stop"),
        ({"hook_event_name": "TaskCreated", "task_subject": "Write docs"}, "Write docs"),
        ({"hook_event_name": "Notification", "message": "Needs input"}, "Needs input"),
    ],
)
def test_descriptions_of_simple_events(payload: dict[str, Any], description: str) -> None:
    assert _norm({**BASE, **payload}).description == description


def test_simple_event_detail_keeps_only_set_fields() -> None:
    e = _norm({**BASE, "hook_event_name": "SessionStart", "source": "resume",
               "permission_mode": "plan"})  # fmt: skip
    assert json.loads(bytes(e.detail)) == {"source": "resume", "permission_mode": "plan"}
    assert bytes(_norm({**BASE, "hook_event_name": "Stop"}).detail) == b""


def test_post_compact_keeps_the_summary_as_text() -> None:
    e = _norm({**BASE, "hook_event_name": "PostCompact", "compact_summary": "We did X"})
    assert e.text == "We did X"


@pytest.mark.parametrize(
    ("record", "kind", "description", "text"),
    [
        ({"kind": "decision", "decision": "Use SQLite"}, "decision", "Use SQLite", ""),
        ({"kind": "failure", "description": "Tests hang"}, "failure", "Tests hang", "Tests hang"),
        ({"kind": "feature_start", "name": "login"}, "feature_start", "login", ""),
    ],
)
def test_explicit_events(record: dict[str, str], kind: str, description: str, text: str) -> None:
    e = _norm({**BASE, "hook_event_name": "CtxdEmit", "ctxd_record": record})
    assert (e.event, e.description, e.text) == (kind, description, text)
    assert json.loads(bytes(e.detail)) == record


@pytest.mark.parametrize(
    ("record", "message"),
    [({"kind": "gossip"}, "unknown explicit event kind 'gossip'"), ([1], "must be an object")],
)
def test_bad_explicit_records_are_payload_errors(record: Any, message: str) -> None:
    with pytest.raises(PayloadError, match=message):
        _norm({**BASE, "hook_event_name": "CtxdEmit", "ctxd_record": record})


def test_clip() -> None:
    assert clip("short", 5) == "short"
    assert clip("abcdefghijklmnopqrst", 16) == "ab …[truncated]"
    assert clip("abcdef", 3) == " …[truncated]"


def test_error_text_tolerates_any_json_and_bad_bytes() -> None:
    assert error_text(msgspec.Raw(b'"plain"')) == "plain"
    assert error_text(msgspec.Raw(b'{"code":2}')) == '{"code":2}'
    assert error_text(msgspec.Raw(b"")) == ""
    assert error_text(msgspec.Raw(b"not json")) == "not json"


def test_bounded_raw_clips_long_strings_of_a_large_input() -> None:
    small = b'{"a":"x"}'
    assert bounded_raw(small, 100) is small
    big = json.dumps({"content": "y" * 3000, "n": 7}).encode()
    out = json.loads(bounded_raw(big, 1024))
    assert out["n"] == 7
    assert out["content"] == "y" * 986 + " …[truncated]"
    assert bounded_raw(b"{" + b"x" * 200, 10) == b'"[unparseable]"'


def test_large_tool_input_detail_is_bounded() -> None:
    e = _norm({**BASE, "hook_event_name": "PreToolUse", "tool_name": "Write",
               "tool_input": {"file_path": "/p/f", "content": "c" * 10000}},
              max_detail=2048)  # fmt: skip
    detail = json.loads(bytes(e.detail))
    assert detail["input"]["file_path"] == "/p/f"
    assert detail["input"]["content"] == "c" * 986 + " …[truncated]"


def test_task_tool_response_is_kept_only_when_small() -> None:
    payload = {**BASE, "hook_event_name": "PostToolUse", "tool_name": "TaskCreate",
               "tool_input": {"subject": "S"}, "tool_response": {"task": {"id": "3"}}}  # fmt: skip
    assert json.loads(bytes(_norm(payload).detail)) == {
        "input": {"subject": "S"},
        "response": {"task": {"id": "3"}},
    }
    payload["tool_response"] = {"task": {"id": "3", "pad": "p" * 100}}
    assert "response" not in json.loads(bytes(_norm(payload, max_detail=50).detail))
