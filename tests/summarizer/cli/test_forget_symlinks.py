"""`ctxd forget` deletes nothing through a symlinked pages/ or handoff/ folder."""

from __future__ import annotations

from pathlib import Path

from helpers import hook_env, payload, run_cli, run_hook

SID = "forget-link-0001"


def test_forget_does_not_delete_through_symlinks(tmp_path: Path) -> None:
    state = tmp_path / "state"
    event = payload(session_id=SID, hook_event_name="UserPromptSubmit", prompt="hello")
    assert run_hook(event, hook_env(state)).returncode == 0
    assert run_cli("sessions", state_dir=state).returncode == 0
    outside = tmp_path / "outside"
    for part in ("pages", "handoff"):
        target = outside / part
        (target / "sessions" / SID).mkdir(parents=True)
        (target / "agents").mkdir()
        (target / f"{SID}.html").write_text("not ctxd's\n")
        (state / part).symlink_to(target)
    before = sorted(str(p.relative_to(outside)) for p in outside.rglob("*"))
    out = run_cli("forget", SID, state_dir=state)
    assert out.returncode == 0, out.stderr
    assert sorted(str(p.relative_to(outside)) for p in outside.rglob("*")) == before
