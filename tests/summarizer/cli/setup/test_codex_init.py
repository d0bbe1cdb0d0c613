"""`ctxd init --host codex` as a user runs it: hooks in .codex/hooks.json (or $CODEX_HOME with
--user), each trusted in $CODEX_HOME/config.toml, the hooks feature on and said so; idempotent;
`--uninstall` leaves every file as it was. (The real Codex running them: tests/e2e.)"""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import pytest
from helpers import clean_env, run_cli

from summarizer.cli.setup.codex_install import is_ctxd_codex_handler, trust_hash

USER_CONFIG = """# my Codex settings
model = "gpt-5.5"  # the one I like

[projects."{root}"]
trust_level = "trusted"

[hooks.state."/elsewhere/hooks.json:stop:0:0"]
trusted_hash = "sha256:0000"
"""
_LABELS = {"SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit",
           "PreToolUse": "pre_tool_use", "PostToolUse": "post_tool_use",
           "PreCompact": "pre_compact", "PostCompact": "post_compact",
           "SubagentStart": "subagent_start", "SubagentStop": "subagent_stop", "Stop": "stop"}  # fmt: skip


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def _home(tmp_path: Path, text: str | None = None) -> Path:
    home = tmp_path / "codex-home"
    home.mkdir(exist_ok=True)
    if text is not None:
        (home / "config.toml").write_text(text)
    return home


def _init(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = clean_env(CODEX_HOME=str(home), HOME=str(project.parent))
    return run_cli("init", "--host", "codex", *args, cwd=project, env=env)


def _trusted(home: Path, hooks_path: Path) -> dict[str, str]:
    doc = json.loads(hooks_path.read_text())
    want = {}
    for event, groups in doc["hooks"].items():
        for g, group in enumerate(groups):
            for h, handler in enumerate(group["hooks"]):
                if is_ctxd_codex_handler(handler):
                    key = f"{hooks_path}:{_LABELS[event]}:{g}:{h}"
                    want[key] = trust_hash(event, group.get("matcher"), handler)
    state = tomllib.loads((home / "config.toml").read_text())["hooks"]["state"]
    assert {k: state[k]["trusted_hash"] for k in want} == want
    return want


def test_install_trusts_every_hook_turns_the_feature_on_and_undoes_exactly(
    project: Path, tmp_path: Path
) -> None:
    original = USER_CONFIG.format(root=project)
    home = _home(tmp_path, original)
    done = _init(project, home)
    assert done.returncode == 0, done.stderr
    hooks_path = project / ".codex" / "hooks.json"
    doc = json.loads(hooks_path.read_text())
    assert set(doc) == {"hooks"} and len(doc["hooks"]) == 9
    (pre,) = doc["hooks"]["PreToolUse"]
    assert pre["matcher"] == "spawn_agent"
    command = pre["hooks"][0]["command"]
    assert command.startswith("exec ") and command.endswith("ctxd_hook/run_hook.py --host codex")
    assert len(_trusted(home, hooks_path)) == 9
    config = (home / "config.toml").read_text()
    assert config.startswith(original)  # the user's lines, comments and all, as they were
    assert tomllib.loads(config)["features"]["hooks"] is True
    assert "turned on Codex's hooks feature ([features] hooks = true)" in done.stdout
    assert "marked ctxd's hooks trusted" in done.stdout
    assert (project / ".gitignore").read_text().splitlines() == [".ctxd/", ".codex/hooks.json"]
    assert (project / ".ctxd" / "config.toml").exists()
    assert "note: Codex reads" not in done.stdout  # the project is trusted in Codex

    again = _init(project, home)
    assert again.returncode == 0 and "no change needed" in again.stdout
    assert (home / "config.toml").read_text() == config

    gone = _init(project, home, "--uninstall")
    assert gone.returncode == 0, gone.stderr
    assert (home / "config.toml").read_text() == original
    assert not (project / ".codex").exists()
    assert not (project / ".ctxd" / "init-codex.json").exists()


def test_the_users_own_hooks_and_settings_stay(project: Path, tmp_path: Path) -> None:
    home = _home(tmp_path, "[features]\nhooks = false  # I turned it off\n")
    hooks_path = project / ".codex" / "hooks.json"
    hooks_path.parent.mkdir()
    mine = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}
    hooks_path.write_text(json.dumps(mine))
    done = _init(project, home)
    assert done.returncode == 0, done.stderr
    doc = json.loads(hooks_path.read_text())
    assert doc["hooks"]["Stop"][0] == mine["hooks"]["Stop"][0]  # ours goes after it
    trusted = _trusted(home, hooks_path)
    assert f"{hooks_path}:stop:1:0" in trusted
    assert "note: Codex reads" in done.stdout  # the project is not trusted in Codex
    gone = _init(project, home, "--uninstall")
    assert gone.returncode == 0, gone.stderr
    assert json.loads(hooks_path.read_text()) == mine
    assert tomllib.loads((home / "config.toml").read_text()) == {"features": {"hooks": False}}


def test_user_install_goes_to_codex_home(project: Path, tmp_path: Path) -> None:
    home = _home(tmp_path)  # no config.toml yet
    done = _init(project, home, "--user")
    assert done.returncode == 0, done.stderr
    assert len(_trusted(home, home / "hooks.json")) == 9
    assert not (project / ".codex").exists()
    assert ".codex/hooks.json" not in (project / ".gitignore").read_text()
    gone = _init(project, home, "--user", "--uninstall")
    assert gone.returncode == 0, gone.stderr
    assert sorted(p.name for p in home.iterdir()) == []  # both files were ctxd's


def test_a_committed_hooks_file_and_shared_are_refused(project: Path, tmp_path: Path) -> None:
    home = _home(tmp_path)
    shared = _init(project, home, "--shared")
    assert shared.returncode != 0 and len(shared.stderr.strip().splitlines()) == 1
    assert "--shared is for Claude Code" in shared.stderr
    (project / ".codex").mkdir()
    (project / ".codex" / "hooks.json").write_text('{"hooks": {}}')
    subprocess.run(["git", "-C", str(project), "add", ".codex/hooks.json"], check=True)
    done = _init(project, home)
    assert done.returncode != 0 and "--user" in done.stderr
    assert (project / ".codex" / "hooks.json").read_text() == '{"hooks": {}}'


def test_host_all_installs_both_clients(project: Path, tmp_path: Path) -> None:
    home = _home(tmp_path, "")
    env = clean_env(CODEX_HOME=str(home), HOME=str(project.parent))
    done = run_cli("init", "--host", "all", cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    assert (project / ".claude" / "settings.local.json").exists()
    assert len(_trusted(home, project / ".codex" / "hooks.json")) == 9
    dry = run_cli("init", "--host", "all", "--uninstall", "--dry-run", cwd=project, env=env)
    assert dry.returncode == 0 and (project / ".codex" / "hooks.json").exists()


def test_doctor_says_when_codex_would_skip_ctxds_hooks(project: Path, tmp_path: Path) -> None:
    home = _home(tmp_path, f'[projects."{project}"]\ntrust_level = "trusted"\n')
    env = clean_env(CODEX_HOME=str(home), HOME=str(project.parent))
    assert _init(project, home).returncode == 0

    def line() -> str:
        done = run_cli("doctor", "--json", cwd=project, env=env)
        checks = {c["name"]: c for c in json.loads(done.stdout)}
        assert checks["hooks"]["status"] == "OK"  # no Claude Code hooks: not a failure here
        return f'{checks["codex hooks"]["status"]} {checks["codex hooks"]["detail"]}'

    assert line().startswith("OK all 9 events installed")
    # The user moves a hook of their own in front of ctxd's: every key names a place.
    hooks_path = project / ".codex" / "hooks.json"
    doc = json.loads(hooks_path.read_text())
    doc["hooks"]["Stop"].insert(0, {"hooks": [{"type": "command", "command": "true"}]})
    hooks_path.write_text(json.dumps(doc))
    assert line().startswith("WARN 1 of ctxd's Codex hooks")
    assert _init(project, home).returncode == 0  # the fix the doctor gives
    assert line().startswith("OK")
