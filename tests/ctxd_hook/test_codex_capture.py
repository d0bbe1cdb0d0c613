"""Codex CLI events through the real hook (`run_hook.py --host codex`) and `ctxd ingest`: the
spool line names the host, and the recorded session is indexed in Claude Code's terms."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from codex_fixture import recorded_session
from helpers import HOOK_CMD, hook_env, payload, query, run_cli, run_hook, spool_lines


def _codex_hook(data: bytes, state_dir: Path, cwd: Path | None = None) -> None:
    done = subprocess.run(
        [*HOOK_CMD, "--host", "codex"], input=data, env=hook_env(state_dir), cwd=cwd,
        capture_output=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_the_spool_line_names_codex_and_claude_code_lines_are_as_before(tmp_path: Path) -> None:
    state = tmp_path / "state"
    event = payload(hook_event_name="Stop", last_assistant_message="done")
    assert run_hook(event, hook_env(state)).returncode == 0
    _codex_hook(event, state)
    odd = subprocess.run([*HOOK_CMD, "--host", "other"], input=event, env=hook_env(state),
                         capture_output=True, timeout=30, check=False)  # fmt: skip
    assert odd.returncode == 0
    claude, codex, unknown = spool_lines(state)
    assert claude.startswith(b'{"ctxd":1,"ts_ns":') and b'"host"' not in claude
    head = codex[: codex.index(b'"event":')]
    assert head.endswith(b',"host":"codex",') and codex.endswith(event + b"}")
    assert b'"host"' not in unknown  # only known clients are named
    result = run_cli("ingest", state_dir=state)
    assert result.returncode == 0, result.stderr
    assert query(state, "SELECT count(*), max(host) FROM sessions") == [(1, "codex")]


def test_a_recorded_codex_session_is_indexed_like_a_claude_code_one(tmp_path: Path) -> None:
    session = recorded_session(tmp_path)
    state = tmp_path / "state"
    for p in session.payloads:
        _codex_hook(json.dumps(p).encode(), state, cwd=session.project)
    result = run_cli("ingest", state_dir=state)
    assert result.returncode == 0, result.stderr
    rows = query(
        state,
        "SELECT event, tool_name, agent_id, error, files, description, text FROM entries"
        " ORDER BY ts_ns",
    )
    failures = [(r[1], r[3].split("\n")[:2]) for r in rows if r[0] == "tool_failure"]
    assert failures == [
        ("Bash", ["Exit code 1", "FAILED tests/test_export.py::test_header - KeyError: total"]),
        ("Bash", ["Exit code 2", "lint: E501"]),
    ]
    passed = [r for r in rows if r[0] == "tool_result" and r[1] == "Bash" and r[2] == "main"]
    assert [r[5] for r in passed] == ["Bash python3 -c 'print(\"1 passed\")'"]
    (patch,) = [r for r in rows if r[0] == "tool_result" and r[1] == "apply_patch"]
    project = session.project
    assert json.loads(patch[4]) == [str(project / "export.py"), str(project / "NOTES.md")]
    # The subagent is the one its prompt names, and its own call is in its lane.
    assert [r[2] for r in rows if r[0] == "agent_start"] == ["reviewer-001"]
    assert [r[2] for r in rows if r[1] == "Bash" and "grep" in r[5]] == ["reviewer-001"] * 2
    assert query(state, "SELECT agent_id, status FROM agents") == [("reviewer-001", "completed")]
    (summary,) = [r[6] for r in rows if r[0] == "post_compact"]
    assert summary == "SUMMARY: export fix in progress."
    listed = run_cli("sessions", "--json", state_dir=state)
    (info,) = json.loads(listed.stdout)
    assert (info["host"], info["failures"]) == ("codex", 2)
    assert "codex" in run_cli("sessions", state_dir=state).stdout.splitlines()[1].split()


def test_without_its_rollout_a_codex_command_is_not_called_failed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    event = payload(
        hook_event_name="PostToolUse", tool_name="Bash", tool_use_id="call_1",
        tool_input={"command": "pytest"}, tool_response="FAILED x\n",
        transcript_path=str(tmp_path / "rollout-gone.jsonl"),
    )  # fmt: skip
    _codex_hook(event, state)
    assert run_cli("ingest", state_dir=state).returncode == 0
    assert query(state, "SELECT event, output_summary FROM entries") == [("tool_result", "FAILED x\n")]


def test_the_preview_of_a_codex_session_is_what_codex_would_get(tmp_path: Path) -> None:
    session = recorded_session(tmp_path)
    state = tmp_path / "state"
    for p in session.payloads:
        _codex_hook(json.dumps(p).encode(), state, cwd=session.project)
    preview = run_cli("resume", session.session_id[:8], "--preview", "--source", "compact",
                      state_dir=state)  # fmt: skip
    assert preview.returncode == 0, preview.stderr
    assert preview.stdout.startswith("ctxd notes for session")
    # The client's own compaction summary stays out: Codex's context holds it already.
    assert "SUMMARY: export fix in progress." not in preview.stdout
    assert len(preview.stdout.encode()) <= 9_800 + 1  # Codex's limit, and the final newline
