"""indexer/prepare/normalize.py, field by field: each expected value is written out literally."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from indexer.models import Entry, HookPayload
from indexer.prepare.normalize import PayloadError, bounded_raw, normalize

BASE = {"session_id": "s1", "cwd": "/proj"}


def _norm(payload: dict[str, Any], max_detail: int = 4096) -> Entry:
    p = msgspec.json.decode(json.dumps({**BASE, **payload}).encode(), type=HookPayload)
    return normalize(
        p,
        ts_ns=1,
        pid=2,
        file_id=3,
        offset=4,
        line_no=5,
        max_text_chars=16000,
        max_detail_bytes=max_detail,
    )


def test_payload_errors_say_which_field_is_missing() -> None:
    p = msgspec.json.decode(b'{"hook_event_name":"Stop"}', type=HookPayload)
    with pytest.raises(PayloadError) as e:
        normalize(p, ts_ns=1, pid=2, file_id=3, offset=4, line_no=5,
                  max_text_chars=10, max_detail_bytes=10)
    assert str(e.value) == "payload has no session_id"
    p = msgspec.json.decode(b'{"session_id":"s1"}', type=HookPayload)
    with pytest.raises(PayloadError) as e:
        normalize(p, ts_ns=1, pid=2, file_id=3, offset=4, line_no=5,
                  max_text_chars=10, max_detail_bytes=10)
    assert str(e.value) == "payload has no hook_event_name"


@pytest.mark.parametrize(
    ("payload", "event", "description", "text", "output"),
    [
        ({"hook_event_name": "UserPromptSubmit", "prompt": "  fix it\nsecond\nthird"},
         "prompt", "fix it", "  fix it\nsecond\nthird", ""),
        ({"hook_event_name": "Stop", "last_assistant_message": "Done.\nmore\nmore"},
         "stop", "Done.", "Done.\nmore\nmore", "Done.\nmore\nmore"),
        ({"hook_event_name": "Stop"}, "stop", "stop", "", ""),
        ({"hook_event_name": "StopFailure", "last_assistant_message": "API error\nretry"},
         "stop_failure", "API error", "API error\nretry", "API error\nretry"),
        ({"hook_event_name": "StopFailure"}, "stop_failure", "stop failure", "", ""),
        ({"hook_event_name": "SubagentStop", "agent_id": "a1", "agent_type": "Explore"},
         "subagent_stop", "subagent stop", "", ""),
        ({"hook_event_name": "SubagentStop", "agent_id": "f1",
          "last_assistant_message": "recap line\nrest"},
         "fork_stop", "recap line", "recap line\nrest", "recap line\nrest"),
        ({"hook_event_name": "SubagentStop", "agent_id": "f1"}, "fork_stop", "fork stop", "", ""),
        ({"hook_event_name": "PostCompact", "compact_summary": "S"},
         "post_compact", "compaction (unknown)", "S", ""),
        ({"hook_event_name": "PostCompact", "trigger": "auto"},
         "post_compact", "compaction (auto)", "", ""),
        ({"hook_event_name": "PreCompact"}, "pre_compact", "compaction requested (unknown)", "", ""),
        ({"hook_event_name": "PreCompact", "trigger": "manual", "custom_instructions": "keep"},
         "pre_compact", "compaction requested (manual)", "keep", ""),
        ({"hook_event_name": "TaskCompleted", "task_subject": "ship", "task_description": "d"},
         "task_completed", "ship", "d", ""),
        ({"hook_event_name": "TaskCreated", "task_subject": "plan", "task_description": "e"},
         "task_created", "plan", "e", ""),
        ({"hook_event_name": "SomethingNew"}, "other", "", "", ""),
        ({"hook_event_name": "PermissionDenied"}, "permission_denied", "", "", ""),
    ],
)
def test_descriptions_texts_and_outputs(
    payload: dict[str, Any], event: str, description: str, text: str, output: str
) -> None:
    e = _norm(payload)
    assert (e.event, e.description, e.text, e.output_summary) == (event, description, text, output)
    assert (e.instruction, e.error, e.files, e.tool_name) == ("", "", (), "")


def test_a_long_first_line_of_a_stop_is_cut_at_200_characters() -> None:
    line = "x" * 300
    e = _norm({"hook_event_name": "Stop", "last_assistant_message": line + "\nrest"})
    assert e.description == "x" * 186 + " …[truncated]"


def test_internal_stops_carry_no_agent_id() -> None:
    fork = _norm({"hook_event_name": "SubagentStop", "agent_id": "f1"})
    summary = _norm({"hook_event_name": "SubagentStop", "agent_id": "f2",
                     "last_assistant_message": "<summary>x</summary>"})
    real = _norm({"hook_event_name": "SubagentStop", "agent_id": "a1", "agent_type": "Plan"})
    assert (fork.cc_agent_id, summary.cc_agent_id, real.cc_agent_id) == ("", "", "a1")
    assert summary.description == "compaction summary"


def test_tool_fields_are_literal() -> None:
    e = _norm({"hook_event_name": "PreToolUse", "tool_name": "Read", "agent_id": "a1",
               "agent_type": "Explore", "tool_input": {}})
    assert (e.tool_name, e.agent_type, e.cc_agent_id, e.files) == ("Read", "Explore", "a1", ())
    assert e.description == "Read"
    assert bytes(e.detail) == b'{"input":{}}'
    bare = _norm({"hook_event_name": "PreToolUse", "tool_name": "ExitPlanMode"})
    assert bytes(bare.detail) == b'{"input":null}'
    assert bare.description == "ExitPlanMode"


@pytest.mark.parametrize(
    ("tool", "tool_input", "description"),
    [
        ("Glob", {"path": "/src"}, "Glob /src"),
        ("TaskCreate", {"subject": "write docs"}, "TaskCreate write docs"),
        ("WebSearch", {"query": "msgspec raw"}, "WebSearch msgspec raw"),
        ("WebFetch", {"url": "https://x.test"}, "WebFetch https://x.test"),
        ("Bash", {"command": "ls -la"}, "Bash ls -la"),
        ("Grep", {"pattern": "TODO", "path": "/src"}, "Grep TODO"),
        ("NotebookEdit", {"notebook_path": "/n.ipynb", "command": "x"}, "NotebookEdit /n.ipynb"),
    ],
)
def test_tool_description_takes_the_first_target(
    tool: str, tool_input: dict[str, str], description: str
) -> None:
    assert _norm({"hook_event_name": "PreToolUse", "tool_name": tool,
                  "tool_input": tool_input}).description == description


def test_only_bash_and_agent_responses_are_read() -> None:
    grep = _norm({"hook_event_name": "PostToolUse", "tool_name": "Grep",
                  "tool_response": {"interrupted": True, "stdout": "hit"}})
    assert (grep.error, grep.output_summary) == ("", "")
    bash = _norm({"hook_event_name": "PostToolUse", "tool_name": "Bash",
                  "tool_response": {"interrupted": True, "stdout": "", "stderr": "boom"}})
    assert (bash.error, bash.output_summary) == ("interrupted", "boom")


def test_agent_outputs_join_only_text_parts() -> None:
    e = _norm({"hook_event_name": "PostToolUse", "tool_name": "Agent",
               "tool_input": {"prompt": "go", "subagent_type": "Plan"},
               "tool_response": {"status": "completed", "agentId": "ag1",
                                 "content": [{"type": "image"}, {"type": "text", "text": "hi"},
                                             "loose", {"type": "text", "text": "there"}]}})
    assert (e.output_summary, e.instruction, e.agent_type, e.cc_agent_id) == (
        "\nhi\nthere", "go", "Plan", "ag1")
    none = _norm({"hook_event_name": "PostToolUse", "tool_name": "Agent",
                  "tool_response": {"status": "completed", "content": {"text": "not a list"}}})
    assert (none.output_summary, none.agent_type) == ("", "general-purpose")


def test_a_remote_launch_is_a_launch() -> None:
    e = _norm({"hook_event_name": "PostToolUse", "tool_name": "Agent",
               "tool_response": {"status": "remote_launched", "agentId": "r1"}})
    assert (e.event, e.cc_agent_id) == ("agent_launched", "r1")


def test_task_tool_responses_are_kept_up_to_the_byte_limit() -> None:
    response = {"task": {"id": "1"}}
    raw = json.dumps(response)  # as the test payload carries it (json.dumps' separators)
    fields = {"hook_event_name": "PostToolUse", "tool_name": "TaskCreate",
              "tool_input": {"subject": "s"}, "tool_response": response}
    kept = _norm(fields, max_detail=len(raw))
    assert bytes(kept.detail) == b'{"input":{"subject": "s"},"response":' + raw.encode() + b"}"
    cut = _norm(fields, max_detail=len(raw) - 1)
    assert bytes(cut.detail) == b'{"input":{"subject": "s"}}'


def test_detail_of_events_without_a_tool_names_each_field() -> None:
    e = _norm({"hook_event_name": "Notification", "message": "m", "reason": "r",
               "trigger": "t", "session_title": "st", "notification_type": "nt",
               "task_id": "7", "task_subject": "ts", "task_description": "td",
               "permission_mode": "plan", "source": "resume"})
    assert json.loads(bytes(e.detail)) == {
        "source": "resume", "reason": "r", "trigger": "t", "session_title": "st",
        "notification_type": "nt", "task_id": "7", "task_subject": "ts",
        "task_description": "td", "permission_mode": "plan",
    }
    long = _norm({"hook_event_name": "TaskCreated", "task_description": "d" * 2100})
    assert json.loads(bytes(long.detail)) == {"task_description": "d" * 1986 + " …[truncated]"}


def test_bounded_raw_keeps_raw_bytes_up_to_the_limit() -> None:
    raw = b'{"a": 1}'
    assert bounded_raw(raw, len(raw)) == raw  # as is, spaces included
    assert bounded_raw(raw, len(raw) - 1) == b'{"a":1}'


def test_bounded_raw_clips_lists_and_then_harder() -> None:
    cut_1000 = "y" * 986 + " …[truncated]"
    cut_100 = "y" * 86 + " …[truncated]"
    value = {"a": ["y" * 2000, 5, {"b": "y" * 2000}]}
    raw = json.dumps(value).encode()
    # 1000-character cuts fit in 4 x 1000 bytes ...
    assert json.loads(bounded_raw(raw, 1000)) == {"a": [cut_1000, 5, {"b": cut_1000}]}
    # ... but not in 4 x 100: then every string is cut to 100.
    assert json.loads(bounded_raw(raw, 100)) == {"a": [cut_100, 5, {"b": cut_100}]}
    many = json.dumps([*range(250), "z" * 2000]).encode()
    assert json.loads(bounded_raw(many, 100)) == list(range(200))


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (None, "unknown explicit event kind ''"),
        ("[1]", "ctxd_record must be an object"),
    ],
)
def test_explicit_records_that_cannot_become_entries(record: str | None, message: str) -> None:
    raw = b'{"session_id":"s1","hook_event_name":"CtxdEmit"'
    raw += (b',"ctxd_record":' + record.encode() if record else b"") + b"}"
    p = msgspec.json.decode(raw, type=HookPayload)
    with pytest.raises(PayloadError) as e:
        normalize(p, ts_ns=1, pid=2, file_id=3, offset=4, line_no=5,
                  max_text_chars=10, max_detail_bytes=100)
    assert str(e.value) == message


def test_explicit_record_without_a_summary_has_an_empty_description() -> None:
    e = _norm({"hook_event_name": "CtxdEmit", "ctxd_record": {"kind": "note"}})
    assert (e.event, e.description, e.text) == ("note", "", "")
    named = _norm({"hook_event_name": "CtxdEmit",
                   "ctxd_record": {"kind": "feature_start", "name": "login"}})
    assert (named.event, named.description, named.text) == ("feature_start", "login", "")
