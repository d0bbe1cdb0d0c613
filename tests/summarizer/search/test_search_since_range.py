"""`ctxd search --since` with a date far in the future or the past answers, never errors."""

from __future__ import annotations

from pathlib import Path

from helpers import hook_env, payload, run_cli, run_hook


def _state(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    event = payload(
        session_id="since-0001", hook_event_name="UserPromptSubmit", prompt="find the zebra"
    )
    assert run_hook(event, hook_env(state)).returncode == 0
    return state


def test_a_since_beyond_the_index_range_finds_nothing(tmp_path: Path) -> None:
    state = _state(tmp_path)
    out = run_cli("search", "zebra", "--since", "9999-01-01", state_dir=state)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "" and "no matches for 'zebra'" in out.stderr


def test_a_since_before_1970_finds_everything(tmp_path: Path) -> None:
    state = _state(tmp_path)
    out = run_cli("search", "zebra", "--since", "0001-01-01", state_dir=state)
    assert out.returncode == 0, out.stderr
    assert "find the **zebra**" in out.stdout
