"""No symlink is followed inside the state directory: planted links change nothing outside it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import hook_env, payload, run_cli, run_hook

SESSION = "0f6a6c8e-1b2d-4c3e-9f40-5a6b7c8d9e01"  # the session of helpers.payload


def _outside(tmp_path: Path) -> Path:
    """A directory outside the state dir, holding files ctxd would write or delete there."""
    out = tmp_path / "outside"
    out.mkdir()
    for name in (
        "victim.jsonl",
        "main.jsonl",
        "precompact_state.json",
        "context.md",
        "running-summary.json",
        "20260101T00.jsonl",
    ):
        (out / name).write_text(f"outside file {name}: must stay as it is\n")
    state = {"session_id": SESSION, "confidence": "high", "covers_ns": 2**62}
    (out / "precompact_state.json").write_text(json.dumps(state))
    (out / "context.md").write_text("SECRET-OUTSIDE-CONTEXT must never be injected\n")
    return out


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _events(state: Path) -> None:
    """A few real hook runs, then an index, so that views and resume files exist to write."""
    for event in (
        payload(hook_event_name="UserPromptSubmit", prompt="fix the login bug"),
        payload(tool_name="Bash", tool_input={"command": "pytest -q"}, tool_use_id="toolu_1"),
        payload(hook_event_name="PreCompact", trigger="manual", custom_instructions=""),
    ):
        assert run_hook(event, hook_env(state)).returncode == 0


def _session_start(state: Path) -> bytes:
    r = run_hook(payload(hook_event_name="SessionStart", source="compact"), hook_env(state))
    assert r.returncode == 0
    return r.stdout


def test_state_dir_that_is_a_symlink_is_refused_by_the_hook(tmp_path: Path) -> None:
    out = _outside(tmp_path)
    (out / "spool").mkdir(mode=0o700)
    state = tmp_path / ".ctxd"
    state.symlink_to(out, target_is_directory=True)
    before = _snapshot(out)
    _events(state)
    assert b"SECRET-OUTSIDE" not in _session_start(state)
    assert _snapshot(out) == before
    r = run_cli("doctor", state_dir=state)
    assert "symlink" in r.stdout or "not private" in r.stdout, r.stdout


def test_spool_that_is_a_symlink_gets_nothing(tmp_path: Path) -> None:
    out = _outside(tmp_path)
    state = tmp_path / ".ctxd"
    state.mkdir(mode=0o700)
    (state / "spool").symlink_to(out, target_is_directory=True)
    before = _snapshot(out)
    _events(state)
    _session_start(state)
    assert _snapshot(out) == before


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777])
def test_state_dir_writable_by_others_is_refused(tmp_path: Path, mode: int) -> None:
    state = tmp_path / ".ctxd"
    state.mkdir()
    os.chmod(state, mode)
    _events(state)
    assert not (state / "spool").exists()
    r = run_cli("doctor", state_dir=state)
    assert "not private" in r.stdout


def test_rebuild_does_not_delete_through_a_symlinked_session_dir(tmp_path: Path) -> None:
    out = _outside(tmp_path)
    state = tmp_path / ".ctxd"
    _events(state)
    assert run_cli("ingest", state_dir=state).returncode == 0
    (state / "sessions" / "evil").symlink_to(out, target_is_directory=True)
    (state / "sessions" / SESSION / "linked.jsonl").symlink_to(out / "victim.jsonl")
    before = _snapshot(out)
    r = run_cli("rebuild", state_dir=state)
    assert r.returncode == 0, r.stderr
    assert _snapshot(out) == before
    assert (state / "sessions" / SESSION / "main.jsonl").is_file()


@pytest.mark.parametrize("where", ["sessions", "resume", "context"])
def test_symlinked_output_dirs_get_nothing(tmp_path: Path, where: str) -> None:
    out = _outside(tmp_path)
    state = tmp_path / ".ctxd"
    _events(state)
    target = state / where / SESSION if where != "context" else state / "context"
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if target.exists():
        for p in target.iterdir():
            p.unlink()
        target.rmdir()
    target.symlink_to(out, target_is_directory=True)
    before = _snapshot(out)
    for args in (
        ("ingest",),
        ("compact",),
        ("rebuild",),
        ("resume", SESSION),
        ("read", "--agent-id", "main", "--session", SESSION),
        ("inject",),
    ):
        run_cli(*args, state_dir=state)
    assert b"SECRET-OUTSIDE" not in _session_start(state)
    assert _snapshot(out) == before


def test_symlinked_view_file_is_not_written_through(tmp_path: Path) -> None:
    out = _outside(tmp_path)
    state = tmp_path / ".ctxd"
    _events(state)
    folder = state / "sessions" / SESSION
    folder.mkdir(parents=True, mode=0o700)
    (folder / "main.jsonl").symlink_to(out / "main.jsonl")
    before = _snapshot(out)
    run_cli("ingest", state_dir=state)
    run_cli("read", "--agent-id", "main", "--session", SESSION, state_dir=state)
    assert _snapshot(out) == before


def test_session_start_never_claims_through_a_symlinked_resume_folder(tmp_path: Path) -> None:
    from summarizer.resume.hook import claim_context

    out = _outside(tmp_path)
    resume = tmp_path / ".ctxd" / "resume"
    resume.mkdir(parents=True, mode=0o700)
    (resume / SESSION).symlink_to(out, target_is_directory=True)
    before = _snapshot(out)
    assert not claim_context(str(resume / SESSION), newer_than_ns=5)
    assert _snapshot(out) == before
    # A symlinked state file in a real folder is not read either.
    real = resume / "other-session"
    real.mkdir(mode=0o700)
    (real / "precompact_state.json").symlink_to(out / "precompact_state.json")
    (real / "context.md").symlink_to(out / "context.md")
    assert claim_context(str(real), newer_than_ns=5) is None
    assert _snapshot(out) == before
