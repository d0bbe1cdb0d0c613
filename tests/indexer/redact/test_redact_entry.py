"""redact_entry in process: every stored field of an Entry is redacted, the rest kept as is."""

from __future__ import annotations

import json

import msgspec
import pytest

from indexer.models import Entry
from indexer.redact.text import redact_detail, redact_entry, redact_text

KEY = "AKIAZ7QWERTY4UIOP2XC"
TAG = "[REDACTED:aws-access-key]"
TEXT_FIELDS = ("description", "instruction", "output_summary", "error", "text", "cwd")


def _entry(**fields: object) -> Entry:
    base: dict[str, object] = {
        "file_id": 3,
        "offset": 120,
        "line_no": 7,
        "ts_ns": 1_700_000_000_000_000_000,
        "pid": 4242,
        "session_id": "0b9c8d7e-1111-2222-3333-444455556666",
        "hook_event": "PreToolUse",
        "event": "tool_call",
        "agent_id": "a1b2c3d4e5f6a7b8c",
        "agent_type": "Explore",
        "tool_name": "Agent",
        "tool_use_id": "toolu_01AgentCall000000000001",
        "description": "Deploy the stack",
        "instruction": "Deploy and report back",
        "output_summary": "done",
        "error": "",
        "files": ("src/app.py",),
        "text": "plain words",
        "cwd": "/home/dev/project",
        "detail": msgspec.Raw(b'{"prompt":"Deploy and report back"}'),
    }
    base.update(fields)
    return Entry(**base)  # type: ignore[arg-type]


def test_clean_entry_is_the_same_object() -> None:
    entry = _entry()
    assert redact_entry(entry) is entry


@pytest.mark.parametrize("field", TEXT_FIELDS)
def test_secret_in_each_text_field_is_redacted_alone(field: str) -> None:
    clean = _entry()
    entry = _entry(**{field: f"use {KEY} now"})
    out = redact_entry(entry)
    assert out is not entry
    assert getattr(out, field) == f"use {TAG} now"
    # Every other field, ids included, is kept exactly.
    for name in Entry.__struct_fields__:
        if name != field:
            assert getattr(out, name) == getattr(clean, name), name
    assert type(out) is Entry


def test_secret_in_a_file_path_is_redacted_and_other_paths_kept() -> None:
    entry = _entry(files=("src/app.py", f"/tmp/{KEY}.txt"))
    out = redact_entry(entry)
    assert out.files == ("src/app.py", f"/tmp/{TAG}.txt")
    assert isinstance(out.files, tuple)
    assert out.instruction == entry.instruction
    assert bytes(out.detail) == bytes(entry.detail)


def test_secret_in_the_detail_only_is_redacted_and_stays_raw() -> None:
    entry = _entry(detail=msgspec.Raw(json.dumps({"prompt": f"key {KEY}"}).encode()))
    out = redact_entry(entry)
    assert isinstance(out.detail, msgspec.Raw)
    assert json.loads(bytes(out.detail)) == {"prompt": f"key {TAG}"}
    assert out.instruction == entry.instruction


def test_secret_in_every_field_at_once() -> None:
    fields: dict[str, object] = {f: f"{f} {KEY}" for f in TEXT_FIELDS}
    fields["files"] = (f"a/{KEY}",)
    fields["detail"] = msgspec.Raw(json.dumps({"k": KEY}).encode())
    out = redact_entry(_entry(**fields))
    for f in TEXT_FIELDS:
        assert getattr(out, f) == f"{f} {TAG}"
    assert out.files == (f"a/{TAG}",)
    assert json.loads(bytes(out.detail)) == {"k": TAG}
    assert KEY not in msgspec.json.encode(out).decode()


def test_empty_detail_with_a_secret_elsewhere() -> None:
    out = redact_entry(_entry(detail=msgspec.Raw(b""), error=f"bad {KEY}"))
    assert out.error == f"bad {TAG}"
    assert bytes(out.detail) == b""


def test_prefilter_hit_that_redacts_nothing_keeps_the_object() -> None:
    # `AKIA` passes the cheap prefilter but is no key: nothing changes, the same entry comes back.
    entry = _entry(text="AKIA is a prefix, not a key")
    assert redact_entry(entry) is entry


def test_secret_spread_over_two_fields_is_not_joined() -> None:
    # The prefilter joins fields with newlines; each field is still redacted on its own.
    entry = _entry(description="AKIAZ7QWERTY", instruction="4UIOP2XC")
    out = redact_entry(entry)
    assert out.description == "AKIAZ7QWERTY"
    assert out.instruction == "4UIOP2XC"


def test_redact_text_same_object_when_clean() -> None:
    text = "nothing secret here " * 3
    assert redact_text(text) is text


def test_redact_detail_invalid_json_falls_back_to_raw_rules() -> None:
    raw = b'{"prompt": "key ' + KEY.encode() + b'" truncated'
    out = redact_detail(raw)
    assert KEY.encode() not in out
    assert TAG.encode() in out
