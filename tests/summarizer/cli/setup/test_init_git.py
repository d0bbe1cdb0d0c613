"""`ctxd init` in a git project whose `.claude/settings.json` is committed: safe to commit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from summarizer.cli.setup.hook_command import default_hook_command
from summarizer.cli.setup.install import EVENTS, install
from tests.helpers import clean_env, run_cli

TEAM_SETTINGS = {
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {
        "PostToolUse": [
            {"matcher": "Edit", "hooks": [{"type": "command", "command": "npx prettier --w"}]}
        ]
    },
}


def git(project: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def team_project(tmp_path: Path) -> Path:
    project = tmp_path / "team-app"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(json.dumps(TEAM_SETTINGS, indent=2) + "\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "team settings")
    return project


def init(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = clean_env(HOME=str(project.parent / "home"))
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    done = run_cli("init", *args, cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    return done


def changed(project: Path) -> set[str]:
    return {line[3:] for line in git(project, "status", "--porcelain").splitlines()}


def ctxd_commands(settings: Path) -> list[str]:
    doc = json.loads(settings.read_text())
    return [
        " ".join([h["command"], *h.get("args", [])])
        for groups in doc.get("hooks", {}).values()
        for group in groups
        for h in group["hooks"]
        if "ctxd-hook" in h["command"] or "ctxd_hook/run_hook.py" in " ".join(h.get("args", []))
    ]


def test_default_init_leaves_the_committed_settings_alone(tmp_path: Path) -> None:
    project = team_project(tmp_path)
    committed = (project / ".claude" / "settings.json").read_bytes()
    for _ in range(2):
        init(project)
    assert (project / ".claude" / "settings.json").read_bytes() == committed
    assert changed(project) == {".gitignore"}  # settings.local.json and .ctxd/ are ignored
    assert not list((project / ".ctxd" / "backups").glob("*"))  # nothing was changed
    git(project, "check-ignore", "-q", ".claude/settings.local.json")
    local = project / ".claude" / "settings.local.json"
    assert len(ctxd_commands(local)) == len(EVENTS)
    assert all(os.path.isabs(c.split()[0]) for c in ctxd_commands(local))  # this machine's
    assert sorted(p.name for p in (project / ".claude").iterdir()) == [
        "settings.json",
        "settings.local.json",
    ]  # no backups piled up


def test_shared_init_writes_a_portable_command_that_runs(tmp_path: Path) -> None:
    project = team_project(tmp_path)
    init(project)
    init(project, "--shared")
    shared = project / ".claude" / "settings.json"
    commands = ctxd_commands(shared)
    assert commands == ["ctxd-hook"] * len(EVENTS)
    text = shared.read_text()
    assert str(tmp_path) not in text and sys.prefix not in text  # nothing of this machine
    assert not (project / ".claude" / "settings.local.json").exists()  # not twice
    assert json.loads(shared.read_text())["permissions"] == TEAM_SETTINGS["permissions"]
    # A teammate's default `ctxd init` then adds nothing of its own.
    out = init(project).stdout
    assert "nothing to add" in out
    assert not (project / ".claude" / "settings.local.json").exists()
    # The portable command is what Claude Code runs: a name looked up on PATH.
    env = clean_env(CLAUDE_PROJECT_DIR=str(project))
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    subprocess.run(
        ["ctxd-hook"], input=b'{"session_id":"s1","hook_event_name":"Stop"}', env=env, check=True
    )
    assert list((project / ".ctxd" / "spool").glob("*.jsonl"))


def test_init_moves_an_old_machine_specific_install_out_of_the_shared_file(
    tmp_path: Path,
) -> None:
    project = team_project(tmp_path)
    shared = project / ".claude" / "settings.json"
    # What earlier versions of `ctxd init` did (their backups aside).
    install(shared, default_hook_command(), backup_dir=tmp_path / "elsewhere")
    assert changed(project) == {".claude/settings.json"}
    out = init(project).stdout
    assert "- SessionStart" in out
    assert json.loads(shared.read_text()) == TEAM_SETTINGS
    assert changed(project) == {".gitignore"}  # the backup is in .ctxd/, not in .claude/
    [backup] = (project / ".ctxd" / "backups").iterdir()
    assert len(ctxd_commands(backup)) == len(EVENTS)
    assert len(ctxd_commands(project / ".claude" / "settings.local.json")) == len(EVENTS)


def test_uninstall_stops_the_daemon_and_removes_only_what_ctxd_made(tmp_path: Path) -> None:
    project = team_project(tmp_path)
    init(project)
    env = clean_env(HOME=str(tmp_path / "home"))
    assert run_cli("start", cwd=project, env=env).returncode == 0
    try:
        status = json.loads(run_cli("status", "--json", cwd=project, env=env).stdout)
        assert status["daemon"] is not None
        out = init(project, "--uninstall").stdout
    finally:
        run_cli("stop", cwd=project, env=env)  # a no-op unless the uninstall failed
    assert f"stopped the daemon (pid {status['daemon']['pid']})" in out
    assert "settings.local.json: removed" in out
    assert json.loads(run_cli("status", "--json", cwd=project, env=env).stdout)["daemon"] is None
    assert sorted(p.name for p in (project / ".claude").iterdir()) == ["settings.json"]
    # The project is as it was: the .gitignore ctxd created is gone, and the captured data
    # that stays keeps itself out of git.
    assert changed(project) == set()
    assert not (project / ".gitignore").exists()
    assert (project / ".ctxd").is_dir()  # the captured data stays, and it says so
    assert "kept" in out and ".ctxd" in out


def test_uninstall_gives_back_the_gitignore_as_it_was(tmp_path: Path) -> None:
    project = team_project(tmp_path)
    before = "node_modules/\n.mcp.json\n"  # the user's own .mcp.json line stays theirs
    (project / ".gitignore").write_text(before)
    git(project, "add", "-A")
    git(project, "commit", "-qm", "gitignore")
    init(project)
    init(project)  # again: idempotent, and what the first run added is still ctxd's
    assert (project / ".gitignore").read_text() == before + ".ctxd/\n.claude/settings.local.json\n"
    git(project, "add", "-A")  # the user commits what init changed
    git(project, "commit", "-qm", "ctxd init")
    out = init(project, "--uninstall").stdout
    assert (project / ".gitignore").read_text() == before
    assert "took .ctxd/ out of" in out
    assert changed(project) == {".gitignore"}  # back to the committed-before content
    assert ".ctxd" not in git(project, "status", "--porcelain", "--untracked-files=all")


def test_init_adds_no_hooks_when_the_plugin_is_enabled(tmp_path: Path) -> None:
    project = team_project(tmp_path)
    user_settings = tmp_path / "home" / ".claude" / "settings.json"
    user_settings.parent.mkdir(parents=True)
    user_settings.write_text(json.dumps({"enabledPlugins": {"ctxd@ctxd": True}}))
    out = init(project).stdout
    assert "come from the Claude Code plugin ctxd@ctxd" in out
    assert sorted(p.name for p in (project / ".claude").iterdir()) == ["settings.json"]
    assert changed(project) == {".gitignore"}
    assert (project / ".gitignore").read_text() == ".ctxd/\n"  # the captured data stays out
    # The plugin records by itself, and finds this venv's `ctxd` for the rest.
    venv_bin = Path(sys.executable).parent
    env = clean_env(HOME=str(tmp_path / "home"), PATH=f"{venv_bin}:/usr/bin:/bin")
    checks = {
        c["name"]: c for c in json.loads(run_cli("doctor", "--json", cwd=project, env=env).stdout)
    }
    assert checks["hooks"]["status"] == "OK" and "plugin ctxd@ctxd" in checks["hooks"]["detail"]
    assert str(venv_bin / "ctxd") in checks["hooks"]["detail"]
    # A `ctxd` the plugin cannot find (not on PATH, not where the install command puts it).
    lost = clean_env(HOME=str(tmp_path / "home"), PATH="/usr/bin:/bin")
    hooks = json.loads(run_cli("doctor", "--json", cwd=project, env=lost).stdout)[0]
    assert hooks["status"] == "WARN" and "finds no ctxd command" in hooks["detail"]
    assert f"ln -sf {venv_bin / 'ctxd'} ~/.local/bin/ctxd" in hooks["fix"]
    # Hooks from `ctxd init --shared` as well: doctor says every event is recorded twice.
    init(project, "--shared")
    checks = {
        c["name"]: c for c in json.loads(run_cli("doctor", "--json", cwd=project, env=env).stdout)
    }
    assert checks["hooks"]["status"] == "WARN" and "twice" in checks["hooks"]["detail"]


def test_the_mcp_server_never_puts_a_path_of_this_machine_in_a_committed_mcp_json(
    tmp_path: Path,
) -> None:
    project = team_project(tmp_path)
    team_servers = {"mcpServers": {"docs": {"command": "npx", "args": ["docs-mcp"]}}}
    (project / ".mcp.json").write_text(json.dumps(team_servers))
    git(project, "add", ".mcp.json")
    git(project, "commit", "-qm", "team MCP servers")
    out = init(project).stdout
    assert "git tracks it" in out and "--shared" in out
    assert json.loads((project / ".mcp.json").read_text()) == team_servers
    assert changed(project) == {".gitignore"}
    # --shared: the portable command, approved in the shared settings; nothing of this machine.
    init(project, "--shared")
    doc = json.loads((project / ".mcp.json").read_text())
    assert doc["mcpServers"]["docs"] == team_servers["mcpServers"]["docs"]
    assert doc["mcpServers"]["ctxd"] == {"type": "stdio", "command": "ctxd", "args": ["mcp"]}
    shared = json.loads((project / ".claude" / "settings.json").read_text())
    assert shared["enabledMcpjsonServers"] == ["ctxd"]
    assert not (project / ".claude" / "settings.local.json").exists()
    assert str(tmp_path) not in (project / ".mcp.json").read_text()
    # A teammate's default init keeps the portable entry rather than writing its own path.
    init(project)
    assert json.loads((project / ".mcp.json").read_text()) == doc
    # Uninstall takes out only ctxd's entry and approval.
    init(project, "--uninstall")
    assert json.loads((project / ".mcp.json").read_text()) == team_servers
    assert "enabledMcpjsonServers" not in json.loads(
        (project / ".claude" / "settings.json").read_text()
    )


def test_a_mcp_json_that_ctxd_creates_is_kept_out_of_git_and_removed_on_uninstall(
    tmp_path: Path,
) -> None:
    project = team_project(tmp_path)
    init(project)
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["ctxd"]
    assert os.path.isabs(entry["command"])  # this machine's interpreter...
    git(project, "check-ignore", "-q", ".mcp.json")  # ...in a file git ignores
    assert changed(project) == {".gitignore"}
    init(project, "--uninstall")
    assert not (project / ".mcp.json").exists()
