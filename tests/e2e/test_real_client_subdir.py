"""The real Claude Code CLI started in a subdirectory of a repository where `ctxd init` ran at
the root: Claude Code runs the root's hooks, with $CLAUDE_PROJECT_DIR set to the subdirectory,
and the events must reach the root's state directory, not a new one in the subdirectory."""

from __future__ import annotations

from pathlib import Path

from claude_standin import Plan, Standin, serve, text
from helpers import run_cli
from test_real_client import _claude, _run, client_env, standin_env


def test_a_session_started_in_a_subdirectory_is_recorded_at_the_root(tmp_path: Path) -> None:
    claude = _claude()
    project, home = tmp_path / "proj", tmp_path / "home"
    subdir = project / "services" / "billing"
    subdir.mkdir(parents=True)
    home.mkdir()
    (project / ".git").mkdir()
    env = client_env(home)
    init = run_cli("init", cwd=project, env=env)
    assert init.returncode == 0, init.stderr
    standin = Standin({"only": Plan([[text("Noted: the heron invoice batch runs nightly.")]])})
    server, port = serve(standin)
    try:
        prompt = "When does the heron invoice batch run? [[plan:only]]"
        session = _run(claude, subdir, standin_env(env, port), prompt)
    finally:
        server.shutdown()
        server.server_close()

    assert not (subdir / ".ctxd").exists()
    assert not (project / "services" / ".ctxd").exists()
    assert list((project / ".ctxd" / "spool").iterdir())
    for where in (project, subdir):  # the commands resolve the same state directory
        found = run_cli("search", "heron invoice", cwd=where, env=env)
        assert found.returncode == 0 and session[:8] in found.stdout, (where, found.stdout)
