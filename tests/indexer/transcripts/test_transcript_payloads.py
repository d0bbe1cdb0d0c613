"""Imported events are stored as if their payloads had been decoded from the hook's JSON."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
from helpers import CORPUS, import_transcripts

import indexer.transcripts.records as records
from indexer.models import HookPayload

TRANSCRIPTS = CORPUS / "transcripts"
SESSION = "11111111-2222-4333-8444-555555555555"
STAMP = "2026-03-01T10:00:0{}.123Z"

pytestmark = pytest.mark.skipif(not TRANSCRIPTS.is_dir(), reason=f"no corpus at {CORPUS}")


def _record(n: int, kind: str, session: str, message: dict[str, Any]) -> dict[str, Any]:
    uuid = f"00000000-0000-4000-8000-{n:012x}"
    return {
        "type": kind,
        "uuid": uuid,
        "sessionId": session,
        "timestamp": STAMP.format(n),
        "cwd": "/work/project",
        "message": message,
    }


def _odd_transcript(folder: Path) -> Path:
    """A prompt whose session id cannot be a path part (its event is quarantined with its
    JSON), and a failed call whose error holds a secret (redacted)."""
    failed = {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True}
    lines = [
        _record(1, "user", "../elsewhere", {"role": "user", "content": "a prompt"}),
        _record(2, "user", SESSION, {"role": "user", "content": "the key AKIAIOSFODNN7EXAMPLQ"}),
        _record(
            3,
            "assistant",
            SESSION,
            {"content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]},
        ),
        _record(
            4, "user", SESSION, {"content": [{**failed, "content": "Error: password=hunter2xyz"}]}
        ),
    ]
    folder.mkdir(parents=True)
    path = folder / "odd.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    old = time.time() - 86400
    os.utime(path, (old, old))
    return path


def _stored(state: Path) -> dict[str, Any]:
    """Everything an import stores: rows (entry ids aside), search documents and hits, views."""
    with sqlite3.connect(state / "index.db") as conn:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(entries)") if r[1] != "id"]
        out: dict[str, Any] = {
            "entries": conn.execute(
                f"SELECT {','.join(columns)} FROM entries ORDER BY id"
            ).fetchall()
        }
        for table in ("sessions", "agents", "agent_aliases"):
            out[table] = conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
        out["quarantine"] = conn.execute(
            "SELECT name, offset, line_no, error, raw FROM quarantine ORDER BY name, offset"
        ).fetchall()
        out["search"] = conn.execute("SELECT rowid, * FROM search ORDER BY rowid").fetchall()
        out["hits"] = [
            conn.execute(
                "SELECT rowid FROM search WHERE search MATCH ? ORDER BY rank", (word,)
            ).fetchall()
            for word in ("error", "test", "agent", "commit")
        ]
    views = sorted(p for p in (state / "sessions").rglob("*") if p.is_file())
    out["views"] = {str(p.relative_to(state)): p.read_bytes() for p in views}
    return out


def test_imported_payloads_are_those_their_hook_json_decodes_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The import builds each event's payload directly; a spooled hook line's payload is
    # decoded from its JSON. Every stored byte must be the same either way.
    files = [*sorted(TRANSCRIPTS.rglob("*.jsonl")), _odd_transcript(tmp_path / "odd")]
    direct = import_transcripts(tmp_path / "direct" / ".ctxd", files)

    decoded: list[HookPayload] = []

    def from_json(fields: dict[str, Any]) -> HookPayload:
        payload = msgspec.json.decode(msgspec.json.encode(fields), type=HookPayload)
        decoded.append(payload)
        return payload

    monkeypatch.setattr(records, "_payload", from_json)
    via_json = import_transcripts(tmp_path / "json" / ".ctxd", files)

    assert len(decoded) > 1000
    assert direct == via_json
    assert direct.quarantined == 1 and direct.entries > 1000
    stored = _stored(tmp_path / "direct" / ".ctxd")
    assert stored == _stored(tmp_path / "json" / ".ctxd")
    [(_, _, _, error, raw)] = stored["quarantine"]
    assert "../elsewhere" in error and b'"prompt":"a prompt"' in raw
    with sqlite3.connect(tmp_path / "direct" / ".ctxd" / "index.db") as conn:
        [(error,)] = conn.execute(
            "SELECT error FROM entries WHERE session_id=? AND hook_event='PostToolUseFailure'",
            (SESSION,),
        ).fetchall()
    assert "hunter2xyz" not in error and "REDACTED" in error
