"""`ctxd task` outside a git repository says so in one line and how to fix it."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import clean_env, run_cli


def test_task_outside_a_repository_says_how_to_fix_it(tmp_path: Path) -> None:
    project = tmp_path / "not-a-repo"
    project.mkdir()
    env = clean_env(GIT_CEILING_DIRECTORIES=str(tmp_path))
    result = run_cli("task", "get", "TASK-1", state_dir=tmp_path / "state", cwd=project, env=env)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "not inside a git repository" in lines[0]
    assert "--repo DIR" in lines[0]
    assert "fatal:" not in lines[0]


def test_task_with_a_missing_repo_folder_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"
    result = run_cli("task", "get", "TASK-1", "--repo", str(missing), state_dir=tmp_path / "state")
    assert result.returncode == 1
    assert "git is not installed" not in result.stderr
    assert f"{missing} is not a directory" in result.stderr
