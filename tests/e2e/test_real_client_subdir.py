"""The real Claude Code CLI started in a subdirectory of a repository where `ctxd init` ran at
the root: Claude Code runs the root's hooks, with $CLAUDE_PROJECT_DIR set to the subdirectory,
and the events must reach the root's state directory, not a new one in the subdirectory."""

from __future__ import annotations

from pathlib import Path

from helpers import run_cli
from test_real_client import client_env, run_sessions


def test_a_session_started_in_a_subdirectory_is_recorded_at_the_root(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    subdir = project / "services" / "billing"
    subdir.mkdir(parents=True)
    home.mkdir()
    (project / ".git").mkdir()
    env = client_env(home)
    init = run_cli("init", cwd=project, env=env)
    assert init.returncode == 0, init.stderr
    [session] = run_sessions(
        env,
        {"only": "Noted: the heron invoice batch runs nightly."},
        [(subdir, "When does the heron invoice batch run? [[plan:only]]")],
    )

    assert not (subdir / ".ctxd").exists()
    assert not (project / "services" / ".ctxd").exists()
    assert list((project / ".ctxd" / "spool").iterdir())
    for where in (project, subdir):  # the commands resolve the same state directory
        found = run_cli("search", "heron invoice", cwd=where, env=env)
        assert found.returncode == 0 and session[:8] in found.stdout, (where, found.stdout)


def test_import_takes_the_sessions_started_in_subdirectories(tmp_path: Path) -> None:
    # No hooks: these sessions reach ctxd only by import. Claude Code names each transcript
    # folder after the directory it was started in; a sibling project whose folder name shares
    # the prefix (`proj-tools` gives `-…-proj-tools`, as `proj/tools` would) is not imported.
    project, home = tmp_path / "proj", tmp_path / "home"
    subdir, sibling = project / "services" / "billing", tmp_path / "proj-tools"
    for folder in (subdir, sibling, home, project / ".git", sibling / ".git"):
        folder.mkdir(parents=True)
    (project / ".ctxd").mkdir(mode=0o700)
    env = client_env(home)
    root, sub, _ = run_sessions(
        env,
        {
            "root": "Noted at the root.",
            "sub": "Noted: the heron invoice batch runs nightly.",
            "other": "Noted: the sibling's egret report.",
        },
        [
            (project, "Plan the kestrel ledger [[plan:root]]"),
            (subdir, "When does the heron invoice batch run? [[plan:sub]]"),
            (sibling, "Write the egret report [[plan:other]]"),
        ],
    )

    imported = run_cli("import", cwd=project, env=env)
    assert imported.returncode == 0, imported.stderr
    for words, session in (("kestrel ledger", root), ("heron invoice", sub)):
        found = run_cli("search", words, cwd=project, env=env)
        assert found.returncode == 0 and session[:8] in found.stdout, (words, found.stdout)
    other = run_cli("search", "egret report", cwd=project, env=env)
    assert other.stdout == "" and "no matches" in other.stderr, other.stdout
