"""The notes read from the spool's tail (when the full notes are not ready) are redacted.

The spool keeps raw payloads; these notes are the one thing SessionStart prints from it. The
first test runs the real hook with no time to build the full notes, as a compaction on a busy
machine does; the second sends every planted value, in every form, through the notes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import hook_env, run_hook
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
from summarizer.resume.fallback_notes import fallback_notes

SID = "4a5be60a-1b2d-4c3e-9f40-5a6b7c8d9e01"
API_KEY = "sk-ant-api03-" + "Qm4Zt8Lr2Xv6Np0Ks3Hd7Wb1Yc5Jf9Ga2Ue6Io0" + "AA"
DB_PASSWORD = "Vq3nTr8xLm2K" + "pZ7w"
PATH_TOKEN = "ghp_" + "k3Jd9Qm2Xv7Lr4Np8Zt1Ws6Yb0Hc5Fg2Ae4u"
NO_TIME = "[resume]\nprebuild = false\nbuild_timeout_s = 0.001\n"


def _event(fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "session_id": SID,
        "transcript_path": f"/home/dev/.claude/projects/-home-dev-app/{SID}.jsonl",
        "cwd": "/home/dev/app",
        "permission_mode": "default",
        **fields,
    }


def _read(path: str, n: int) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "tool_name": "Read" if n % 2 else "Edit",
        "tool_input": {"file_path": path, "old_string": "a", "new_string": "b"},
        "tool_use_id": f"toolu_01Fallback{n:014d}",
    }


def test_the_hook_hands_back_the_latest_request_without_its_secrets(tmp_path: Path) -> None:
    state = tmp_path / ".ctxd"
    state.mkdir(mode=0o700)
    (state / "config.toml").write_text(NO_TIME)
    env = hook_env(state)
    events = [
        _read(f"/home/dev/app/.cache/tokens/{PATH_TOKEN}.json", 1),
        _read("/home/dev/app/src/deploy.py", 2),
        {
            "hook_event_name": "UserPromptSubmit",
            "prompt": f"Deploy with ANTHROPIC_API_KEY={API_KEY} and "
            f"DATABASE_URL=postgres://app:{DB_PASSWORD}@db.internal/app, then check the logs",
        },
    ]
    for fields in events:
        assert run_hook(json.dumps(_event(fields)).encode(), env).returncode == 0
    start = _event({"hook_event_name": "SessionStart", "source": "compact"})
    done = run_hook(json.dumps(start).encode(), env)
    text = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    # The notes from the spool's tail are what came back, and they still say what was asked.
    assert "the full notes were not ready in time" in text
    assert "Most recent user request: Deploy with ANTHROPIC_API_KEY=[REDACTED:" in text
    assert "then check the logs" in text
    assert "- /home/dev/app/.cache/tokens/[REDACTED:github-token].json (read)" in text
    assert "- /home/dev/app/src/deploy.py (edited)" in text
    for secret in (API_KEY, DB_PASSWORD, PATH_TOKEN):
        assert fingerprint(secret) not in text


def _forms(p: Planted) -> dict[str, str]:
    text = p.context.format(s=p.secret)
    return {
        "plain": text,
        "json-escaped": json_escaped(text, p.secret),
        "url-encoded": url_encoded(text, p.secret),
        "base64": f"echo {base64_wrapped(text)} | base64 -d",
    }


@pytest.mark.parametrize("form", ["plain", "json-escaped", "url-encoded", "base64"])
def test_no_planted_value_comes_back_in_the_notes(tmp_path: Path, form: str) -> None:
    """Every value as the latest prompt of a session of its own; every token also as the name
    of a file the session read and one it edited."""
    state = tmp_path / ".ctxd"
    (state / "spool").mkdir(parents=True, mode=0o700)
    lines = []
    sessions: list[tuple[str, Planted]] = []
    for n, p in enumerate(PLANTED):
        sid = f"planted-{n:04d}"
        sessions.append((sid, p))
        events: list[dict[str, Any]] = []
        if not p.needs_context:
            events += [_read(f"/srv/app/{p.secret}.json", 1), _read(f"/srv/{p.secret}", 2)]
        events.append({"hook_event_name": "UserPromptSubmit", "prompt": _forms(p)[form]})
        for k, fields in enumerate(events):
            raw = json.dumps({**_event(fields), "session_id": sid}).encode()
            lines.append(build_line(raw, 1_790_000_000_000_000_000 + n * 10 + k, 4242))
    (state / "spool" / "20260101T00.jsonl").write_bytes(b"".join(lines))
    leaks = []
    for sid, p in sessions:
        notes = fallback_notes(str(state), sid, "ctxd notes for session")
        assert "Most recent user request: " in notes  # the notes were built from the spool
        if fingerprint(p.secret) in notes or (form == "base64" and base64_needle(p) in notes):
            leaks.append(f"{p.kind}: {notes[:300]}")
    assert leaks == []
