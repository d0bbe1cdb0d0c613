"""A project whose path holds characters that mean something in a URI (`?`, `#`, `%`, spaces)
works like any other: the read commands open its own index, never a file cut off at `?`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import hook_env, payload, run_cli, run_hook

SESSION = "0f6a6c8e-1b2d-4c3e-9f40-5a6b7c8d9e01"  # the session of helpers.payload


@pytest.mark.parametrize("name", ["proj?x=1", "proj#2 %41 50%"])
def test_read_commands_find_the_events_of_such_a_project(tmp_path: Path, name: str) -> None:
    parent = tmp_path / "projects"
    state = parent / name / ".ctxd"
    prompt = payload(hook_event_name="UserPromptSubmit", prompt="fix the quirky login bug")
    assert run_hook(prompt, hook_env(state)).returncode == 0
    ingest = run_cli("ingest", state_dir=state)
    assert ingest.returncode == 0, ingest.stderr

    sessions = run_cli("sessions", state_dir=state)
    assert sessions.returncode == 0, sessions.stderr
    assert "fix the quirky login bug" in sessions.stdout
    read = run_cli("read", "--agent-id", "main", state_dir=state)
    assert read.returncode == 0, read.stderr
    assert [e["description"] for e in json.loads(read.stdout)["entries"]] == [
        "fix the quirky login bug"
    ]
    search = run_cli("search", "quirky", state_dir=state)
    assert search.returncode == 0 and SESSION[:8] in search.stdout, search.stdout
    status = run_cli("status", state_dir=state)
    assert status.returncode == 0 and "entries:     1" in status.stdout, status.stdout
    # Nothing was made beside the project (a URI cut at `?` or `#` named a file there).
    assert [p.name for p in parent.iterdir()] == [name]
