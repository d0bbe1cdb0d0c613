"""`ctxd import` never reads ctxd's own files: the state directory, or anything in it, given as
a PATH is refused in one line; a folder that holds the state directory is searched without it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from helpers import hook_env, payload, run_cli, run_hook


def _state_with_events(project: Path) -> Path:
    state = project / ".ctxd"
    for prompt in ("fix the login bug", "then the logout bug"):
        event = payload(hook_event_name="UserPromptSubmit", prompt=prompt)
        assert run_hook(event, hook_env(state)).returncode == 0
    r = run_cli("ingest", state_dir=state)
    assert r.returncode == 0, r.stderr
    return state


def _entries(state: Path) -> int:
    conn = sqlite3.connect(state / "index.db")
    try:
        return int(conn.execute("SELECT count(*) FROM entries").fetchone()[0])
    finally:
        conn.close()


@pytest.mark.parametrize("target", ["state dir", "spool segment", "spool", "view", "index.db"])
def test_the_state_directory_and_its_files_are_refused(tmp_path: Path, target: str) -> None:
    state = _state_with_events(tmp_path / "project")
    path = {
        "state dir": state,
        "spool": state / "spool",
        "spool segment": next((state / "spool").glob("*.jsonl")),
        "view": next((state / "sessions").rglob("main.jsonl")),
        "index.db": state / "index.db",
    }[target]
    before = _entries(state)
    r = run_cli("import", str(path), state_dir=state)
    assert r.returncode != 0
    assert r.stderr.count("\n") == 1, r.stderr
    assert "ctxd's state directory" in r.stderr and str(state) in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert _entries(state) == before
    conn = sqlite3.connect(state / "index.db")
    try:
        assert conn.execute("SELECT count(*) FROM quarantine").fetchone()[0] == 0
    finally:
        conn.close()


def test_a_folder_holding_the_state_directory_is_searched_without_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    state = _state_with_events(project)
    before = _entries(state)
    record = {"type": "user", "sessionId": "5e55-10a1", "uuid": "u1", "cwd": str(project),
              "timestamp": "2026-01-01T00:00:00.000Z",
              "message": {"role": "user", "content": "import me"}}
    (project / "chat.jsonl").write_text(json.dumps(record) + "\n")
    r = run_cli("import", str(project), state_dir=state)
    assert r.returncode == 0, r.stderr
    assert "in 1 of 1 transcript files" in r.stdout, r.stdout  # the state dir's files skipped
    assert _entries(state) == before + 1
