"""`ctxd import --host codex`: the recorded Codex session's rollouts give the entries its hooks
gave, nothing twice when the hooks captured them too, and only this project's rollouts."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from codex_fixture import CodexSession, recorded_session
from helpers import HOOK_CMD, clean_env, hook_env, query, run_cli

from indexer.transcripts.codex_rollouts import rollout_files

_ENTRIES = (
    "SELECT hook_event, event, tool_name, tool_use_id, agent_id, error, files, text FROM entries"
    " ORDER BY ts_ns"
)


def _import(session: CodexSession, state: Path, *args: str) -> str:
    env = clean_env(CODEX_HOME=str(session.codex_home), CTXD_HOME=str(state))
    done = run_cli("import", "--host", "codex", *args, cwd=session.project, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _capture(session: CodexSession, state: Path) -> None:
    for p in session.payloads:
        done = subprocess.run([*HOOK_CMD, "--host", "codex"], input=json.dumps(p).encode(),
                              env=hook_env(state), cwd=session.project, capture_output=True,
                              timeout=30, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
    assert run_cli("ingest", state_dir=state).returncode == 0


def test_the_rollouts_alone_give_the_sessions_story(tmp_path: Path) -> None:
    session = recorded_session(tmp_path)
    state = tmp_path / "state"
    out = _import(session, state, *map(str, session.rollouts()))
    assert "of 2 Codex rollouts" in out
    rows = query(state, _ENTRIES)
    failures = [r[5].split("\n")[:2] for r in rows if r[1] == "tool_failure"]
    assert failures == [
        ["Exit code 1", "FAILED tests/test_export.py::test_header - KeyError: total"],
        ["Exit code 2", "lint: E501"],
    ]
    prompts = [(r[1], r[4], r[7]) for r in rows if r[1] in ("prompt", "subagent_prompt")]
    assert prompts == [
        ("prompt", "main", "Fix the CSV export header [[plan:main]]"),
        # The subagent's task, in its lane: not a request of the user's.
        ("subagent_prompt", "reviewer-001", "AgentId: reviewer-001\nReview export.py [[plan:sub]]"),
        ("prompt", "main", "Now document the export"),
    ]
    (patch,) = [r for r in rows if r[2] == "apply_patch"]
    assert json.loads(patch[6]) == [str(session.project / "export.py"),
                                    str(session.project / "NOTES.md")]  # fmt: skip
    grep = "SELECT agent_id FROM entries WHERE tool_name='Bash' AND description LIKE '%grep%'"
    assert query(state, grep) == [("reviewer-001",)]  # the subagent's call, in its lane
    assert query(state, "SELECT agent_id, status FROM agents") == [("reviewer-001", "completed")]
    assert [r[7] for r in rows if r[1] == "post_compact"] == ["SUMMARY: export fix in progress."]
    stops = [r[7] for r in rows if r[1] == "stop"]
    assert stops[0].startswith("Decided to stream rows with the csv module")
    assert query(state, "SELECT host, failures FROM sessions") == [("codex", 2)]


def test_an_import_adds_nothing_the_hooks_captured(tmp_path: Path) -> None:
    session = recorded_session(tmp_path)
    state = tmp_path / "state"
    _capture(session, state)
    captured = query(state, _ENTRIES)
    out = _import(session, state, *map(str, session.rollouts()))
    assert out.startswith("imported 0 entries"), out
    assert query(state, _ENTRIES) == captured
    again = _import(session, state, *map(str, session.rollouts()))
    assert again.startswith("imported 0 entries from 0 lines"), again


def test_without_a_path_only_this_projects_rollouts_are_read(tmp_path: Path) -> None:
    session = recorded_session(tmp_path)
    other = session.main_rollout().with_name("rollout-2026-12-02T09-00-00-other.jsonl")
    text = session.main_rollout().read_text().replace(str(session.project), "/elsewhere/app")
    other.write_text(text)
    state = session.project / ".ctxd"
    chosen = rollout_files(session.codex_home, state)
    assert other not in chosen and sorted(chosen) == sorted(set(session.rollouts()) - {other})
    assert rollout_files(session.codex_home, None) == sorted(
        session.rollouts(), key=lambda p: (p.name, str(p))
    )
    env = clean_env(CODEX_HOME=str(session.codex_home))
    done = run_cli("import", "--host", "codex", cwd=session.project, env=env)
    assert done.returncode == 0 and "of 2 Codex rollouts" in done.stdout, done
    shutil.rmtree(session.codex_home / "sessions")
    gone = run_cli("import", "--host", "codex", cwd=session.project, env=env)
    assert gone.returncode != 0 and "CODEX_HOME" in gone.stderr


def test_a_plan_in_a_rollout_is_the_sessions_todo_list(tmp_path: Path) -> None:
    # Codex runs no hook for update_plan: only its rollout has the plan.
    session = recorded_session(tmp_path)
    rollout = session.main_rollout()
    lines = rollout.read_text().splitlines()
    call = next(json.loads(x) for x in lines if '"name":"update_plan"' in x)
    output = next(json.loads(x) for x in lines if '"unsupported call: update_plan"' in x)
    output["payload"]["output"] = "Plan updated"
    with rollout.open("a") as f:
        for rec in (call, output):
            rec["payload"]["call_id"] = "call_plan_1"
            rec["ordinal"] += 1000
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")
    state = tmp_path / "state"
    _import(session, state, str(rollout))
    assert run_cli("sessions", state_dir=state).returncode == 0  # brings todos.json up to date
    todos = json.loads((state / "sessions" / session.session_id / "todos.json").read_text())
    assert {t["content"]: t["status"] for t in todos["todos"]} == {
        "Fix the header": "completed",
        "Document the export": "in_progress",
    }


def test_a_code_mode_session_gives_the_calls_its_scripts_made(tmp_path: Path) -> None:
    # Code mode: the model's one tool runs a script; hooks see the tools the script calls, and
    # the rollout has only their ends. The script itself is no event.
    session = recorded_session(tmp_path, "code-mode-0.171.0")
    alone, both = tmp_path / "alone", tmp_path / "both"
    _import(session, alone, str(session.main_rollout()))
    rows = query(alone, "SELECT event, tool_name, tool_use_id, error, files FROM entries"
                        " WHERE tool_name<>'' ORDER BY ts_ns")  # fmt: skip
    assert [(r[0], r[1], r[3].split("\n")[0]) for r in rows] == [
        ("tool_failure", "Bash", "Exit code 4"),
        ("tool_result", "apply_patch", ""),
    ]
    assert all(r[2].startswith("exec-") for r in rows)
    assert json.loads(rows[1][4]) == [str(session.project / "a.txt")]
    _capture(session, both)
    captured = query(both, _ENTRIES)
    out = _import(session, both, str(session.main_rollout()))
    tools = [r for r in query(both, _ENTRIES) if r[2]]
    assert [(r[1], r[2]) for r in tools] == [
        ("tool_use", "Bash"), ("tool_failure", "Bash"),
        ("tool_use", "apply_patch"), ("tool_result", "apply_patch"),
    ]  # fmt: skip
    assert [r for r in query(both, _ENTRIES) if r[2]] == [r for r in captured if r[2]], out
