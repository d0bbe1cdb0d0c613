"""`ctxd read` on a view file with corrupt lines: they are skipped and counted, never fatal.

Seed 000 §3.3.4 reads a context file line by line and skips what does not parse. Events go
through the real hook, `ctxd ingest` writes the views, then lines of the orchestrator's view are
damaged on disk (bytes that are not JSON, JSON that is no object, bytes that are not UTF-8) and
every `ctxd read` runs as a real subprocess.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import hook_env, payload, run_cli, run_hook

SESSION = "5d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
PROMPTS = [f"step {i}: change module {i}" for i in range(1, 7)]
DAMAGE = {
    "not JSON": b'{"event":"prompt","descr',
    "not an object": b'["event", "prompt"]',
    "not UTF-8": b'{"event":"prompt","description":"\xff\xfe"}',
}


def _seed(state: Path) -> Path:
    for prompt in PROMPTS:
        line = payload(session_id=SESSION, hook_event_name="UserPromptSubmit", prompt=prompt)
        assert run_hook(line, hook_env(state)).returncode == 0
    assert run_cli("ingest", state_dir=state).returncode == 0
    view = state / "sessions" / SESSION / "main.jsonl"
    assert len(view.read_bytes().splitlines()) == len(PROMPTS)
    return view


def _damage(view: Path, line_numbers: list[int], bad: bytes) -> None:
    lines = view.read_bytes().splitlines()
    for n in line_numbers:
        lines[n] = bad
    view.write_bytes(b"\n".join(lines) + b"\n")


def _descriptions(entries: list[dict[str, object]]) -> list[object]:
    return [e["description"] for e in entries]


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_json_output_skips_corrupt_lines_and_counts_them(tmp_path: Path, kind: str) -> None:
    state = tmp_path / "state"
    view = _seed(state)
    _damage(view, [1, 4], DAMAGE[kind])
    proc = run_cli("read", "--agent-id", "main", "--session", SESSION, state_dir=state)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    out = json.loads(proc.stdout)
    kept = [p for i, p in enumerate(PROMPTS) if i not in (1, 4)]
    assert _descriptions(out["entries"]) == kept
    assert out["skipped_lines"] == 2


def test_lines_counts_valid_entries_reading_past_a_corrupt_one(tmp_path: Path) -> None:
    state = tmp_path / "state"
    view = _seed(state)
    _damage(view, [4], DAMAGE["not JSON"])
    out = json.loads(run_cli("read", "--agent-id", "main", "--lines", "2", state_dir=state).stdout)
    assert _descriptions(out["entries"]) == [PROMPTS[3], PROMPTS[5]]
    assert out["skipped_lines"] == 1


def test_text_output_says_on_stderr_how_many_lines_were_skipped(tmp_path: Path) -> None:
    state = tmp_path / "state"
    view = _seed(state)
    _damage(view, [0], DAMAGE["not JSON"])
    proc = run_cli("read", "--agent-id", "main", "--format", "text", state_dir=state)
    assert proc.returncode == 0, proc.stderr
    shown = [line for line in proc.stdout.splitlines() if "[prompt]" in line]
    assert [line.split("] ", 1)[1] for line in shown] == PROMPTS[1:]
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "skipped 1 corrupt line" in proc.stderr and str(view) in proc.stderr
    assert "ctxd rebuild" in proc.stderr


def test_a_clean_view_reports_nothing_skipped(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _seed(state)
    proc = run_cli("read", "--agent-id", "main", "--format", "text", state_dir=state)
    assert proc.returncode == 0 and proc.stderr == ""
    assert "skipped_lines" not in json.loads(
        run_cli("read", "--agent-id", "main", state_dir=state).stdout
    )


def test_views_are_appended_after_a_corrupt_last_line_without_doubling(tmp_path: Path) -> None:
    """The writer finds where a view stands from its last line that parses."""
    state = tmp_path / "state"
    view = _seed(state)
    with view.open("ab") as f:
        f.write(DAMAGE["not an object"] + b"\n")
    line = payload(session_id=SESSION, hook_event_name="UserPromptSubmit", prompt="step 7")
    assert run_hook(line, hook_env(state)).returncode == 0
    out = json.loads(run_cli("read", "--agent-id", "main", state_dir=state).stdout)
    assert _descriptions(out["entries"]) == [*PROMPTS, "step 7"]
    assert out["skipped_lines"] == 1
