"""A session the hooks captured only in part, then backfilled by `ctxd import`: event-time order.

ctxd was installed in the middle of a session: the hooks (the real hook process) capture its
last request and tool call; its first requests are only in Claude Code's transcript, which
`ctxd import` (the real CLI) brings in afterwards, so the older events are stored last. What
the user reads must follow the time the events happened: the views, `ctxd read --lines N`, the
hand-back's latest request and the session's title.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from helpers import hook_env, payload, run_cli, run_hook

SESSION = "3a9d8c7b-6e5f-4a3b-9c2d-1e0f9a8b7c6d"
FIRST = "Add CSV export to the reports page"
SECOND = "Now cover the export with a test"
LAST = "Ship it: update the changelog"


def _stamp(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _record(kind: str, uuid: str, ts: float, content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": uuid,
        "sessionId": SESSION,
        "timestamp": _stamp(ts),
        "cwd": "/home/dev/shop",
        "isSidechain": False,
        "userType": "external",
        "message": {"role": kind, "content": content},
        **extra,
    }


def _tool_turn(n: int, ts: float, path: str) -> list[dict[str, Any]]:
    use = {"type": "tool_use", "id": f"toolu_0{n}", "name": "Read", "input": {"file_path": path}}
    result = {"type": "tool_result", "tool_use_id": f"toolu_0{n}", "content": "x = 1"}
    return [
        _record("assistant", f"a{n}", ts, [use]),
        _record("user", f"r{n}", ts + 1, [result], toolUseResult={"file": {"filePath": path}}),
    ]


def _transcript(path: Path, now: float) -> None:
    """The whole session: two requests an hour ago, then the one the hooks also saw (now)."""
    early = now - 3600
    records = [
        _record("user", "p1", early, FIRST),
        *_tool_turn(1, early + 10, "/home/dev/shop/reports.py"),
        _record("user", "p2", early + 600, SECOND),
        *_tool_turn(2, early + 610, "/home/dev/shop/tests/test_reports.py"),
        _record("user", "p3", now, LAST),
        *_tool_turn(3, now + 1, "/home/dev/shop/CHANGELOG.md"),
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _hooks(state: Path) -> None:
    """What the hooks captured: the last request and its tool call (now)."""
    events = [
        payload(session_id=SESSION, hook_event_name="UserPromptSubmit", prompt=LAST),
        payload(
            session_id=SESSION,
            hook_event_name="PostToolUse",
            tool_name="Read",
            tool_use_id="toolu_03",
            tool_input={"file_path": "/home/dev/shop/CHANGELOG.md"},
            tool_response={"file": {"filePath": "/home/dev/shop/CHANGELOG.md"}},
        ),
    ]
    for line in events:
        assert run_hook(line, hook_env(state)).returncode == 0
    assert run_cli("ingest", state_dir=state).returncode == 0


def _backfilled(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    transcript = tmp_path / f"{SESSION}.jsonl"
    now = time.time()
    _transcript(transcript, now)
    _hooks(state)
    proc = run_cli("import", str(transcript), state_dir=state)
    assert proc.returncode == 0, proc.stderr
    return state


def _read(state: Path, *args: str) -> list[dict[str, Any]]:
    proc = run_cli("read", "--agent-id", "main", "--session", SESSION, *args, state_dir=state)
    assert proc.returncode == 0, proc.stderr
    entries: list[dict[str, Any]] = json.loads(proc.stdout)["entries"]
    return entries


def test_the_view_lists_the_backfilled_events_before_the_captured_ones(tmp_path: Path) -> None:
    state = _backfilled(tmp_path)
    entries = _read(state, "--lines", "1000")
    assert [e["timestamp"] for e in entries] == sorted(e["timestamp"] for e in entries)
    prompts = [e["description"] for e in entries if e["event"] == "prompt"]
    assert prompts == [FIRST, SECOND, LAST]  # each once: the captured one is not doubled


def test_read_lines_gives_the_latest_events(tmp_path: Path) -> None:
    state = _backfilled(tmp_path)
    latest = _read(state, "--lines", "2")
    assert [(e["event"], e.get("tool_use_id", e["description"])) for e in latest] == [
        ("prompt", LAST),
        ("tool_result", "toolu_03"),
    ]


def test_the_hand_back_and_the_title_follow_event_time(tmp_path: Path) -> None:
    state = _backfilled(tmp_path)
    pkg = json.loads(run_cli("resume", SESSION, "--json", state_dir=state).stdout)
    assert pkg["next_action"] == LAST
    assert pkg["session"]["title"] == FIRST
    last = [e["description"] for e in pkg["last_entries"] if e["event"] == "prompt"]
    assert last[-1] == LAST
    listed = run_cli("sessions", state_dir=state).stdout
    assert FIRST in listed and LAST not in listed
