"""The first compaction of a project with no daemon, installed: the PreCompact hook starts the
notes' build in the background, and `ctxd compact` right after it compacts in this process
(it may wait for that build's lock, never for a daemon that is not there)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from installed import Installed

SID = "9d0c1b2a-3e4f-4a5b-8c6d-7e8f9a0b1c2d"


def _hook(installed: Installed, project: Path, event: dict[str, object]) -> None:
    """Send one event through the exact command `ctxd init` installed for it."""
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    name = str(event["hook_event_name"])
    [handler] = settings["hooks"][name][0]["hooks"]
    base = {"session_id": SID, "transcript_path": str(project / "t.jsonl"), "cwd": str(project)}
    done = subprocess.run(
        [handler["command"], *handler.get("args", [])],
        input=json.dumps({**base, **event}),
        cwd=project,
        env=installed.env(CLAUDE_PROJECT_DIR=str(project)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_compact_right_after_precompact_with_no_daemon(installed: Installed, workdir: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=workdir, check=True)
    init = installed.run("ctxd", "init", cwd=workdir)
    assert init.returncode == 0, init.stderr
    _hook(installed, workdir, {"hook_event_name": "UserPromptSubmit", "prompt": "fix the export"})
    for i in range(20):
        _hook(
            installed,
            workdir,
            {
                "hook_event_name": "PostToolUse",
                "tool_name": "Bash",
                "tool_use_id": f"toolu_{i}",
                "tool_input": {"command": f"make step{i}"},
                "tool_response": {"stdout": "ok", "stderr": "", "interrupted": False},
            },
        )
    _hook(installed, workdir, {"hook_event_name": "PreCompact", "trigger": "manual"})
    done = installed.run("ctxd", "compact", cwd=workdir)
    assert done.returncode == 0, done.stderr
    assert "error" not in done.stderr, done.stderr
    status = json.loads(installed.run("ctxd", "status", "--json", cwd=workdir).stdout)
    assert status["daemon"] is None and status["last_compaction"], status
