"""Spool lines that plant every secret of tests/planted_secrets.py in every field Claude Code
sends, in five forms, as the hook writes them; and what a leak of each looks like."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from planted_secrets import (
    PLANTED,
    Planted,
    base64_needle,
    base64_wrapped,
    fingerprint,
    json_escaped,
    url_encoded,
)

from ctxd_hook.hook import build_line

FORMS = ("plain", "wire-escaped", "json-escaped", "url-encoded", "base64")
FIELDS = (
    "prompt",
    "bash-input",
    "bash-output",
    "write",
    "read",
    "file-path",
    "error",
    "subagent-prompt",
    "stop",
    "subagent-stop",
    "compact-summary",
    "task-create",
)
CWD = "/home/dev/app"
# A bug whose exception quotes the event (tests/data/faults/quote_payload/sitecustomize.py):
# the real `ctxd ingest` and daemon run with it on segments of the session "planted-fault".
FAULT_CLI, FAULT_DAEMON = "20260101T01.jsonl", "20260101T02.jsonl"


def field_payload(field: str, text: str, n: int) -> dict[str, Any]:
    """The hook payload that carries text in one field Claude Code sends."""
    tool = {"tool_use_id": f"toolu_planted_{n:06d}"}
    if field == "prompt":
        return {"hook_event_name": "UserPromptSubmit", "prompt": text}
    if field == "bash-input":
        return {
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": text, "description": "run it"},
            **tool,
        }
    if field == "bash-output":
        return {
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "cat notes.txt"},
            "tool_response": {"stdout": text, "stderr": "", "interrupted": False},
            **tool,
        }
    if field == "write":
        return {
            "hook_event_name": "PostToolUse",
            "tool_name": "Write",
            "tool_input": {"file_path": f"{CWD}/.env", "content": text},
            "tool_response": {"type": "create", "filePath": f"{CWD}/.env"},
            **tool,
        }
    if field == "read":
        return {
            "hook_event_name": "PostToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": f"{CWD}/.env"},
            "tool_response": {
                "type": "text",
                "file": {"filePath": f"{CWD}/.env", "content": text},
            },
            **tool,
        }
    if field == "file-path":
        path = f"{CWD}/cache/{text}.json"
        return {
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": path},
            **tool,
        }
    if field == "error":
        return {
            "hook_event_name": "PostToolUseFailure",
            "tool_name": "Bash",
            "tool_input": {"command": "make deploy"},
            "error": f"Exit code 1\n{text}",
            **tool,
        }
    if field == "subagent-prompt":
        return {
            "hook_event_name": "PreToolUse",
            "tool_name": "Agent",
            "tool_input": {
                "description": "deploy",
                "subagent_type": "general-purpose",
                "prompt": f"AgentId: deployer-{n}\n{text}",
            },
            **tool,
        }
    if field == "stop":
        return {
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": text,
        }
    if field == "subagent-stop":
        return {
            "hook_event_name": "SubagentStop",
            "stop_hook_active": False,
            "agent_id": f"a{n:015x}",
            "agent_type": "general-purpose",
            "last_assistant_message": text,
        }
    if field == "compact-summary":
        return {"hook_event_name": "PostCompact", "trigger": "manual", "compact_summary": text}
    if field == "task-create":  # a Claude Code task: its id is n, its description the text
        return {
            "hook_event_name": "PostToolUse",
            "tool_name": "TaskCreate",
            "tool_input": {"subject": f"Deploy step {n}", "description": text},
            "tool_response": {"task": {"id": str(n), "subject": f"Deploy step {n}"}},
            **tool,
        }
    raise AssertionError(field)


def forms(context: str, secret: str) -> dict[str, str]:
    text = context.format(s=secret)
    return {
        "plain": text,
        "wire-escaped": text,  # escaped in the spool line's JSON, not in the text
        "json-escaped": json_escaped(text, secret),
        "url-encoded": url_encoded(text, secret),
        "base64": f"echo {base64_wrapped(text)} | base64 -d",
    }


def _wire_escape(raw: bytes, secret: str) -> bytes:
    """raw JSON with the secret's characters written as \\u escapes (valid JSON, same text)."""
    plain = json.dumps(secret)[1:-1].encode()
    escaped = "".join(
        f"\\u{ord(c):04x}" if not c.isalnum() or i % 5 == 0 else c for i, c in enumerate(secret)
    ).encode()
    assert plain in raw
    return raw.replace(plain, escaped)


def needles() -> list[tuple[str, bytes]]:
    """(kind, bytes that must not appear): each value's fingerprint, and the part of the
    base64 form that encodes the value (not its context)."""
    out = []
    for p in PLANTED:
        out.append((p.kind, fingerprint(p.secret).encode()))
        out.append((p.kind + "/base64", base64_needle(p).encode()))
    return out


def _event(session: str, fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": CWD,
        "permission_mode": "default",
        **fields,
    }


def write_spool(state: Path) -> dict[int, tuple[Planted, str]]:
    """Every value in every form in every field (a session per field, a PreCompact ending
    each), and every form in a malformed line; returns the value and form of each event n."""
    spool = state / "spool"
    spool.mkdir(parents=True, mode=0o700)
    lines: list[bytes] = []
    ts = 1_790_000_000_000_000_000
    n = 0
    where: dict[int, tuple[Planted, str]] = {}
    for field in FIELDS:
        session = f"planted-{field}"
        for p in PLANTED:
            context = "{s}" if field == "file-path" else p.context
            for form, text in forms(context, p.secret).items():
                if field == "file-path" and (form == "base64" or p.needs_context):
                    continue  # a path holds a token, not a command line or a base64 blob
                n += 1
                where[n] = (p, form)
                raw = json.dumps(
                    _event(session, field_payload(field, text, n)), separators=(",", ":")
                )
                data = raw.encode()
                if form == "wire-escaped":
                    data = _wire_escape(data, p.secret)
                lines.append(build_line(data, ts + n * 1000, 4242))
        n += 1  # a PreCompact per session: the resume state is written for it
        pre = {"hook_event_name": "PreCompact", "trigger": "manual", "custom_instructions": ""}
        lines.append(build_line(json.dumps(_event(session, pre)).encode(), ts + n * 1000, 4242))
    # Malformed lines: the secret inside a line that is no valid event goes to the quarantine.
    for p in PLANTED:
        for text in forms(p.context, p.secret).values():
            lines.append(
                b'{"ctxd":1,"ts_ns":5,"pid":1,"event":{"session_id":"planted-bad",'
                b'"prompt":"' + json.dumps(text)[1:-1].encode() + b'"\n'
            )
    (spool / "20260101T00.jsonl").write_bytes(b"".join(lines))
    return where


def write_fault_segment(state: Path, name: str) -> int:
    """Every planted value in every form, in prompts of the session the fault breaks on."""
    lines = []
    for i, p in enumerate(PLANTED):
        for j, text in enumerate(forms(p.context, p.secret).values()):
            event = {
                "session_id": "planted-fault",
                "hook_event_name": "UserPromptSubmit",
                "cwd": CWD,
                "prompt": text,
            }
            ts = 1_790_100_000_000_000_000 + int(name[9:11]) * 10**9 + (i * 10 + j) * 1000
            lines.append(build_line(json.dumps(event).encode(), ts, 4343))
    (state / "spool" / name).write_bytes(b"".join(lines))
    return len(lines)
