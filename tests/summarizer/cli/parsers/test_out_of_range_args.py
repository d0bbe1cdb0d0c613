"""Dates and counts past what SQLite's 64-bit integers hold are answered, not internal errors."""

from __future__ import annotations

from pathlib import Path

from helpers import hook_env, payload, run_cli, run_hook

SID = "range-0001"


def _state(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    event = payload(session_id=SID, hook_event_name="UserPromptSubmit", prompt="hello")
    assert run_hook(event, hook_env(state)).returncode == 0
    assert run_cli("sessions", state_dir=state).returncode == 0
    return state


def test_forget_before_year_one_forgets_nothing(tmp_path: Path) -> None:
    state = _state(tmp_path)
    out = run_cli("forget", "--before", "0001-01-01", state_dir=state)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("forgot 0 sessions")
    assert SID[:8] in run_cli("sessions", state_dir=state).stdout


def test_forget_before_a_far_date_forgets_everything(tmp_path: Path) -> None:
    state = _state(tmp_path)
    out = run_cli("forget", "--before", "9999-12-31", state_dir=state)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("forgot 1 sessions")
    assert SID[:8] not in run_cli("sessions", state_dir=state).stdout


def test_sessions_with_a_huge_limit_lists_them_all(tmp_path: Path) -> None:
    state = _state(tmp_path)
    out = run_cli("sessions", "--limit", str(10**20), state_dir=state)
    assert out.returncode == 0, out.stderr
    assert SID[:8] in out.stdout
