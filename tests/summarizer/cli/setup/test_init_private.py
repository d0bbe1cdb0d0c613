"""`ctxd init` makes an existing, group-writable state directory private instead of refusing it."""

from __future__ import annotations

import os
from pathlib import Path

from helpers import clean_env, run_cli


def test_init_makes_an_existing_state_dir_private(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    state = project / ".ctxd"
    state.mkdir()
    os.chmod(state, 0o775)
    done = run_cli("init", cwd=project, env=clean_env(HOME=str(tmp_path / "home")))
    assert done.returncode == 0, done.stderr
    assert os.stat(state).st_mode & 0o777 == 0o700
    assert (state / "config.toml").is_file()


def test_init_never_chmods_through_a_symlinked_state_dir(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.chmod(elsewhere, 0o755)
    (project / ".ctxd").symlink_to(elsewhere, target_is_directory=True)
    done = run_cli("init", cwd=project, env=clean_env(HOME=str(tmp_path / "home")))
    assert done.returncode != 0
    assert "symlink" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert os.stat(elsewhere).st_mode & 0o777 == 0o755
    assert list(elsewhere.iterdir()) == []
