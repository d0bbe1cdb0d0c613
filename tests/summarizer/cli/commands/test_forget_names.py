"""`ctxd forget` names what it forgets: a prefix or an unknown id is an error, never a no-op success."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import hook_env, payload, run_cli, run_hook

SESSION = "0f6a6c8e-1b2d-4c3e-9f40-5a6b7c8d9e01"


def _recorded(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    prompt = payload(hook_event_name="UserPromptSubmit", prompt="remember-this-phrase")
    assert run_hook(prompt, hook_env(state)).returncode == 0
    assert run_cli("ingest", state_dir=state).returncode == 0
    return state


def test_forget_of_a_prefix_names_the_whole_id_and_deletes_nothing(tmp_path: Path) -> None:
    state = _recorded(tmp_path)
    r = run_cli("forget", SESSION[:8], state_dir=state)
    assert r.returncode == 1, r.stdout
    assert len(r.stderr.strip().splitlines()) == 1 and SESSION in r.stderr, r.stderr
    assert SESSION in run_cli("sessions", "--json", state_dir=state).stdout


def test_forget_of_an_unknown_session_is_an_error(tmp_path: Path) -> None:
    state = _recorded(tmp_path)
    r = run_cli("forget", "no-such-session", state_dir=state)
    assert r.returncode == 1, r.stdout
    assert "no session" in r.stderr and "ctxd sessions" in r.stderr, r.stderr


def test_forget_of_the_whole_id_still_forgets(tmp_path: Path) -> None:
    state = _recorded(tmp_path)
    r = run_cli("forget", SESSION, state_dir=state)
    assert r.returncode == 0, r.stderr
    assert "forgot 1 sessions" in r.stdout
    assert SESSION not in run_cli("sessions", "--json", state_dir=state).stdout
