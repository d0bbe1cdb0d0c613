"""A FIFO where a resume file should be never hangs the SessionStart hook."""

from __future__ import annotations

import os
from pathlib import Path

from helpers import hook_env, payload, run_hook

SID = "fifo-resume-0001"


def test_a_fifo_startup_file_is_skipped(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = hook_env(state)
    warm = payload(session_id=SID, hook_event_name="UserPromptSubmit", prompt="hi")
    assert run_hook(warm, env).returncode == 0
    (state / "context").mkdir(mode=0o700, exist_ok=True)
    os.mkfifo(state / "context" / "startup.md", 0o600)
    start = payload(session_id="fifo-resume-0002", hook_event_name="SessionStart", source="startup")
    out = run_hook(start, env)  # run_hook's own timeout turns a hang into a failure
    assert out.returncode == 0
