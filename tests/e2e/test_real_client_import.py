"""The real Claude Code CLI names a project's transcript folder by its own rule, and `ctxd import`
finds it: here for a project whose path holds a character outside the Basic Multilingual Plane
(an emoji), which Claude Code's rule turns into two dashes (one per UTF-16 code unit), and for a
path long enough that the name is cut and ends with a hash of the path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import run_cli
from test_real_client import client_env, run_sessions

from indexer.transcripts.paths import project_folder_name


@pytest.mark.parametrize(
    "name",
    [
        "\U0001f680 launch-é",
        # Over 200 characters once named: cut, then a hash of the whole path appended.
        "monorepo-" + "n" * 150 + "/\U0001f680 launch-é",
    ],
)
def test_import_finds_the_transcripts_of_a_project_named_with_an_emoji(
    tmp_path: Path, name: str
) -> None:
    project, home = tmp_path / name, tmp_path / "home"
    project.mkdir(parents=True)
    home.mkdir()
    (project / ".git").mkdir()
    env = client_env(home)
    state = project / ".ctxd"
    state.mkdir(mode=0o700)  # no hooks installed: the session reaches ctxd only by import
    [session] = run_sessions(
        env,
        {"only": "Noted: the petrel manifest ships on Tuesday."},
        [(project, "When does the petrel manifest ship? [[plan:only]]")],
    )

    folders = [p.name for p in (home / ".claude" / "projects").iterdir()]
    assert folders == [project_folder_name(os.path.realpath(project))]
    imported = run_cli("import", cwd=project, env=env)
    assert imported.returncode == 0, imported.stderr
    found = run_cli("search", "petrel manifest", cwd=project, env=env)
    assert found.returncode == 0 and session[:8] in found.stdout, found.stdout
