"""`ctxd view` does not follow a symlinked resume folder into the page."""

from __future__ import annotations

from pathlib import Path

from helpers import hook_env, payload, run_cli, run_hook

SID = "linked-0001"
OUTSIDE = "text-from-outside-the-state-dir-0043"


def test_a_symlinked_resume_folder_is_not_read(tmp_path: Path) -> None:
    state = tmp_path / "state"
    event = payload(session_id=SID, hook_event_name="UserPromptSubmit", prompt="hello there")
    assert run_hook(event, hook_env(state)).returncode == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("context.md", "consumed-context.md"):
        (outside / name).write_text(f"{OUTSIDE}\n")
    (state / "resume").mkdir(mode=0o700, exist_ok=True)
    (state / "resume" / SID).symlink_to(outside)
    out = run_cli("view", SID, "-o", str(tmp_path / "page.html"), state_dir=state)
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "page.html").read_text()
    assert "hello there" in page  # the page itself was built
    assert OUTSIDE not in page


def test_a_plain_resume_folder_is_shown(tmp_path: Path) -> None:
    state = tmp_path / "state"
    event = payload(session_id=SID, hook_event_name="UserPromptSubmit", prompt="hello there")
    assert run_hook(event, hook_env(state)).returncode == 0
    folder = state / "resume" / SID
    folder.mkdir(parents=True, mode=0o700)
    (folder / "context.md").write_text("the prepared resume text\n")
    out = run_cli("view", SID, "-o", str(tmp_path / "page.html"), state_dir=state)
    assert out.returncode == 0, out.stderr
    assert "the prepared resume text" in (tmp_path / "page.html").read_text()
