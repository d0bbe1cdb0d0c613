"""Worktree snapshots in a project `ctxd init` set up: the state dir gitignored, visible to git,
ignored from inside (as the plugin leaves it), or outside the repository. Real `ctxd` commands."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from helpers import clean_env, run_cli
from task_helpers import edit, git, make_repo

TASK = "TASK-0824"
TASK_FILE = "tasks/TASK-0824.task.yaml"


def _ctxd(repo: Path, *args: str, state: Path | None = None) -> dict[str, object]:
    done = run_cli(*args, "--format", "json", cwd=repo, env=_env(state))
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    doc: dict[str, object] = json.loads(done.stdout)
    return doc


def _env(state: Path | None) -> dict[str, str]:
    return clean_env(CTXD_HOME=str(state)) if state is not None else clean_env()


def _project(tmp_path: Path, layout: str) -> tuple[Path, Path]:
    """A repository set up by `ctxd init`, its state dir laid out as `layout`; (repo, state)."""
    repo = make_repo(tmp_path)
    state = tmp_path / "outside" if layout == "outside" else repo / ".ctxd"
    init = run_cli("init", cwd=repo, env=_env(state if layout == "outside" else None))
    assert init.returncode == 0, init.stderr
    gitignore = (repo / ".gitignore").read_text()
    if layout == "gitignored":
        assert ".ctxd/" in gitignore.splitlines()  # what `ctxd init` does
    elif layout in ("visible", "ignored-inside"):
        (repo / ".gitignore").write_text(gitignore.replace(".ctxd/\n", ""))
        if layout == "ignored-inside":  # the plugin's way: a .gitignore of `*` in the state dir
            (state / ".gitignore").write_text("*\n")
    # ctxd's own files (.gitignore, settings, .mcp.json) are part of the base, not of the task;
    # a team may commit its config overrides even with the state dir ignored.
    git(repo, "add", "-A")
    if layout == "gitignored":
        git(repo, "add", "-f", ".ctxd/config.toml")
    git(repo, "commit", "-qm", "ctxd init")
    return repo, state


@pytest.mark.parametrize("layout", ["gitignored", "visible", "ignored-inside", "outside"])
def test_snapshot_and_verify_in_a_project_ctxd_init_set_up(tmp_path: Path, layout: str) -> None:
    repo, state = _project(tmp_path, layout)
    outside = state if layout == "outside" else None
    _ctxd(repo, "task", "init", TASK, "--task-file", TASK_FILE, state=outside)
    _ctxd(repo, "task", "update-agent", TASK, "--agent", "implementer", "--status",
          "in_progress", state=outside)  # fmt: skip
    edit(repo, "src/a.py", 3, "a3 = 'implemented'")
    snap = _ctxd(repo, "task", "snapshot-worktree", TASK, "--agent", "implementer", state=outside)
    changed = [f["path"] for f in snap["data"]["files_changed"]]  # type: ignore[index]
    assert changed == ["src/a.py"]
    diff = _ctxd(repo, "task", "get-diff", TASK, "--agent", "implementer", state=outside)
    text = gzip.decompress(Path(diff["data"]["path"]).read_bytes()).decode()  # type: ignore[index]
    assert "a3 = 'implemented'" in text and ".ctxd" not in text

    # The state dir changes all the time (every hook event, a config edit): never drift.
    spool = state / "spool"
    spool.mkdir(exist_ok=True)
    (spool / "20260101T00.jsonl").write_text('{"ctxd":1}\n')
    with (state / "config.toml").open("a") as config:
        config.write("# edited during the task\n")
    ok = _ctxd(repo, "task", "verify-worktree", TASK, "--expected-agent", "implementer",
               state=outside)  # fmt: skip
    assert ok["success"] is True

    # A hand edit of the project is drift, whatever the state dir's layout.
    edit(repo, "src/b.py", 5, "b5 = 'by hand'")
    drift = run_cli("task", "verify-worktree", TASK, "--expected-agent", "implementer",
                    cwd=repo, env=_env(outside))  # fmt: skip
    assert drift.returncode == 1
    assert "src/b.py" in drift.stdout + drift.stderr
    assert ".ctxd" not in drift.stdout + drift.stderr
