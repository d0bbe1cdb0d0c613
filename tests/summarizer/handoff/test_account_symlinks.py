"""Agents' accounts written by a catch-up never follow a symlinked handoff folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import hook_env, run_cli, run_hook

from summarizer.cli.commands.demo_session import demo_session


def _replay(state: Path, events: list[dict[str, object]]) -> None:
    env = hook_env(state)
    for event in events:
        assert run_hook(json.dumps(event).encode(), env).returncode == 0


@pytest.mark.parametrize("linked", ["handoff", "handoff/agents"])
def test_accounts_are_not_written_through_a_symlink(tmp_path: Path, linked: str) -> None:
    state = tmp_path / "state"
    events = demo_session(str(tmp_path / "proj"))[:-1]  # without its PreCompact (see the
    # handoff hook tests: it would start a detached builder racing the reader)
    _replay(state, events[:1])
    outside = tmp_path / "outside"
    outside.mkdir()
    if linked == "handoff/agents":
        (state / "handoff").mkdir(mode=0o700, exist_ok=True)
    (state / linked).symlink_to(outside)
    _replay(state, events[1:])
    assert run_cli("sessions", state_dir=state).returncode == 0
    assert sorted(p.name for p in outside.rglob("*")) == []


def test_accounts_are_written_in_a_plain_folder(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _replay(state, demo_session(str(tmp_path / "proj"))[:-1])
    (state / "handoff" / "agents" / "arch-001.md").unlink()  # the hook's own, lighter one
    assert run_cli("sessions", state_dir=state).returncode == 0
    account = state / "handoff" / "agents" / "arch-001.md"
    assert "Design the CSV export API" in account.read_text()
    assert account.stat().st_mode & 0o777 == 0o600
