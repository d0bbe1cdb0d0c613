"""Which session `ctxd emit` writes to, and that its own stream never shadows `main`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import hook_env, payload, run_cli, run_hook, spool_lines

REAL = "5e6f7a8b-1111-4222-8333-444455556666"


def emitted_sessions(state: Path) -> list[str]:
    sessions = []
    for line in spool_lines(state):
        event = json.loads(line)["event"]
        if event["hook_event_name"] == "CtxdEmit":
            sessions.append(event["session_id"])
    return sessions


def start_real_session(state: Path) -> None:
    for event in (
        payload(session_id=REAL, hook_event_name="SessionStart", source="startup"),
        payload(session_id=REAL, hook_event_name="UserPromptSubmit", prompt="add CSV export"),
    ):
        assert run_hook(event, hook_env(state)).returncode == 0


def emit(state: Path, *extra_env: tuple[str, str]) -> None:
    env = hook_env(state, **dict(extra_env))
    proc = run_cli("emit", "decision", "use the csv module", env=env)
    assert proc.returncode == 0, proc.stderr


def test_outside_claude_code_emit_goes_to_the_project_notes_stream(tmp_path: Path) -> None:
    state = tmp_path / "state"
    start_real_session(state)
    emit(state)
    assert emitted_sessions(state) == ["ctxd-project-notes"]
    # The orchestrator's history is still the conversation's, not the stream's.
    out = json.loads(run_cli("read", "--agent-id", "main", state_dir=state).stdout)
    assert out["entries"] and {e["session_id"] for e in out["entries"]} == {REAL}


def test_inside_claude_code_emit_attaches_to_the_current_session(tmp_path: Path) -> None:
    state = tmp_path / "state"
    emit(state, ("CLAUDECODE", "1"), ("CLAUDE_CODE_SESSION_ID", REAL))
    assert emitted_sessions(state) == [REAL]


def test_inside_an_older_claude_code_emit_takes_the_newest_open_session(tmp_path: Path) -> None:
    state = tmp_path / "state"
    start_real_session(state)
    assert run_cli("ingest", state_dir=state).returncode == 0
    emit(state, ("CLAUDECODE", "1"))  # no CLAUDE_CODE_SESSION_ID: look at the index
    assert emitted_sessions(state) == [REAL]


def test_ctxd_session_id_wins(tmp_path: Path) -> None:
    state = tmp_path / "state"
    emit(state, ("CLAUDECODE", "1"), ("CLAUDE_CODE_SESSION_ID", REAL), ("CTXD_SESSION_ID", "run-7"))
    assert emitted_sessions(state) == ["run-7"]


def test_revoking_a_constraint_in_force_works_and_a_missing_one_fails(tmp_path: Path) -> None:
    state = tmp_path / "state"
    rule = "never touch src/billing_legacy.py"
    assert run_cli("emit", "constraint", rule, state_dir=state).returncode == 0
    ok = run_cli("emit", "constraint", "--revoke", rule, state_dir=state)
    assert ok.returncode == 0, ok.stderr
    again = run_cli("emit", "constraint", "--revoke", rule, state_dir=state)
    assert again.returncode == 1 and again.stderr.count("\n") == 1
    assert "no constraint in force" in again.stderr and "ctxd inject" in again.stderr
    injection = json.loads(run_cli("inject", state_dir=state).stdout)
    assert rule not in json.dumps(injection)
