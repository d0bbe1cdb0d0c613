"""`ctxd init`: state dir and config, hooks merged into settings, idempotent, exact uninstall."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from helpers import clean_env, run_cli

from summarizer.cli.commands.sessions import default_config_text
from summarizer.cli.setup.install import EVENTS, RECALL_MATCHER

DATA = Path(__file__).resolve().parents[3] / "data" / "install"


def _init(project: Path, *args: str, home: Path | None = None) -> tuple[int, str, str]:
    env = clean_env(HOME=str(home or project.parent / "home"))
    done = run_cli("init", *args, cwd=project, env=env)
    return done.returncode, done.stdout, done.stderr


def _ctxd_events(settings: Path) -> dict[str, list[dict[str, object]]]:
    doc = json.loads(settings.read_text())
    found: dict[str, list[dict[str, object]]] = {}
    for event, groups in doc.get("hooks", {}).items():
        for group in groups:
            for h in group["hooks"]:
                if str(h.get("args", [""])[-1]).endswith("ctxd_hook/run_hook.py"):
                    found.setdefault(event, []).append({**h, "matcher": group.get("matcher")})
    return found


def test_init_on_an_empty_project(tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    code, out, err = _init(project)
    assert code == 0, err
    state = project / ".ctxd"
    assert state.stat().st_mode & 0o777 == 0o700
    assert (state / "config.toml").read_bytes() == default_config_text()
    assert (state / "config.toml").stat().st_mode & 0o777 == 0o600
    assert "[resume]" in default_config_text().decode()
    settings = project / ".claude" / "settings.local.json"  # paths of this machine
    hooks = _ctxd_events(settings)
    assert set(hooks) == set(EVENTS)
    assert not (project / ".claude" / "settings.json").exists()
    for event, handlers in hooks.items():
        assert len(handlers) == 1
        h = handlers[0]
        assert Path(str(h["command"])).is_absolute() and Path(str(h["command"])).exists()
        assert isinstance(h["timeout"], int) and 1 <= h["timeout"] <= 60
        assert h["matcher"] == (RECALL_MATCHER if event == "PreToolUse" else None)
    assert (
        (project / ".gitignore").read_text()
        == (
            ".ctxd/\n.claude/settings.local.json\n.mcp.json\n"  # .mcp.json: ctxd made it, this machine's
        )
    )
    assert "+ SessionStart" in out and ".gitignore" in out
    # The installed command really is the hook: run it as Claude Code would.
    h = hooks["PostToolUse"][0]
    import subprocess

    argv = [str(h["command"]), *[str(a) for a in h["args"]]]  # type: ignore[attr-defined]
    subprocess.run(
        argv,
        input=b'{"session_id":"s1","hook_event_name":"Stop"}',
        check=True,
        env=clean_env(CLAUDE_PROJECT_DIR=str(project)),
        timeout=30,
    )
    assert list((state / "spool").glob("*.jsonl"))


def test_init_shared_keeps_existing_hooks_and_settings_and_is_idempotent(tmp_path: Path) -> None:
    project = tmp_path / "app"
    (project / ".claude").mkdir(parents=True)
    settings = project / ".claude" / "settings.json"
    shutil.copy(DATA / "existing-project" / "settings.json", settings)
    original = json.loads(settings.read_text())
    (project / ".gitignore").write_text("node_modules/\n")
    code, out, err = _init(project, "--shared")
    assert code == 0, err
    merged = json.loads(settings.read_text())
    for key in ("$schema", "permissions", "env", "model", "statusLine", "includeCoAuthoredBy"):
        assert merged[key] == original[key]
    for event, groups in original["hooks"].items():
        for group in groups:
            assert group in merged["hooks"][event]  # every user hook kept as it was
    assert set(_portable_events(settings)) == set(EVENTS)
    assert sorted(settings.parent.iterdir()) == [settings]  # no backup piles up in .claude/
    backups = sorted((project / ".ctxd" / "backups").iterdir())
    assert len(backups) == 1 and backups[0].name.startswith("settings.json.")
    assert json.loads(backups[0].read_text()) == original
    assert "backup" in out
    before = settings.read_bytes()
    for _ in range(2):
        code, out, _ = _init(project, "--shared")
        assert code == 0 and "no change needed" in out
    assert settings.read_bytes() == before
    assert sorted((project / ".ctxd" / "backups").iterdir()) == backups  # still one backup
    assert (project / ".gitignore").read_text() == "node_modules/\n.ctxd/\n"
    code, out, _ = _init(project, "--uninstall")
    assert code == 0 and "- SessionStart" in out
    assert json.loads(settings.read_text()) == original
    assert sorted(settings.parent.iterdir()) == [settings]
    assert list((project / ".ctxd" / "backups").iterdir()) == []  # the backup went too


def _portable_events(settings: Path) -> list[str]:
    doc = json.loads(settings.read_text())
    return [
        event
        for event, groups in doc.get("hooks", {}).items()
        for group in groups
        for h in group["hooks"]
        if h.get("command") == "ctxd-hook"
    ]


def test_init_dry_run_writes_nothing(tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    code, out, _ = _init(project, "--dry-run")
    assert code == 0 and "dry run" in out and "would create" in out
    assert sorted(p.name for p in project.iterdir()) == []


def test_init_user_writes_home_settings(tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    home = tmp_path / "home"
    code, _, err = _init(project, "--user", home=home)
    assert code == 0, err
    assert set(_ctxd_events(home / ".claude" / "settings.json")) == set(EVENTS)
    assert not (project / ".claude").exists()
    code, _, _ = _init(project, "--user", "--uninstall", home=home)
    assert code == 0
    assert not (home / ".claude").exists()  # ctxd created it; nothing else was in it


def test_init_invalid_settings_is_a_one_line_error(tmp_path: Path) -> None:
    project = tmp_path / "app"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text('{"hooks": {,}}')
    code, _, err = _init(project)
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert "invalid JSON" in err
    assert (project / ".claude" / "settings.json").read_text() == '{"hooks": {,}}'


def test_doctor_after_init(tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    assert _init(project)[0] == 0
    env = clean_env(HOME=str(tmp_path / "home"))
    done = run_cli("doctor", "--json", cwd=project, env=env)
    checks = {c["name"]: c for c in json.loads(done.stdout)}
    assert checks["hooks"]["status"] == "OK"
    assert checks["state dir"]["status"] == "OK"
    assert checks["config"]["status"] == "OK"
    assert checks["tiktoken"]["status"] == "OK"
    assert checks["daemon"]["status"] == "WARN" and checks["daemon"]["fix"]
    assert done.returncode == 0
    (project / ".ctxd").chmod(0o755)
    done = run_cli("doctor", cwd=project, env=env)
    assert done.returncode == 1 and "FAIL  state dir" in done.stdout and "chmod" in done.stdout


@pytest.mark.parametrize("earlier", ["indexer/hook.py", "indexer/run_hook.py"])
def test_hooks_of_an_earlier_version_are_reported_and_replaced(tmp_path: Path, earlier: str) -> None:
    # Earlier versions installed `…/indexer/hook.py` itself, compiled again for every event,
    # then `…/indexer/run_hook.py`, before the hook had a package of its own.
    project = tmp_path / "app"
    project.mkdir()
    assert _init(project)[0] == 0
    settings = project / ".claude" / "settings.local.json"
    older = re.sub(r"(plugin/)?ctxd_hook/run_hook\.py", earlier, settings.read_text())
    assert older != settings.read_text()
    settings.write_text(older)
    env = clean_env(HOME=str(tmp_path / "home"))
    doctor = run_cli("doctor", cwd=project, env=env)
    assert "WARN  hooks: installed in" in doctor.stdout and "earlier version" in doctor.stdout
    assert _init(project)[0] == 0  # init again: the earlier handlers are replaced, not added
    hooks = _ctxd_events(settings)
    assert set(hooks) == set(EVENTS) and all(len(h) == 1 for h in hooks.values())
    assert earlier not in settings.read_text()
    assert "OK    hooks: all" in run_cli("doctor", cwd=project, env=env).stdout


def test_recall_off_keeps_pre_tool_use_for_agent_calls_and_doctor_says_so(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".git").mkdir()
    env = clean_env(HOME=str(tmp_path / "home"))
    assert run_cli("init", cwd=project, env=env).returncode == 0
    settings = project / ".claude" / "settings.local.json"
    assert _ctxd_events(settings)["PreToolUse"][0]["matcher"] == RECALL_MATCHER
    config = project / ".ctxd" / "config.toml"
    config.write_text(config.read_text().replace("recall_on_action = true",
                                                 "recall_on_action = false"))  # fmt: skip
    doctor = run_cli("doctor", "--json", cwd=project, env=env)
    (check,) = [c for c in json.loads(doctor.stdout) if c["name"] == "recall"]
    assert check["status"] == "WARN" and "ctxd init" in check["fix"]
    # init again: the matcher is narrowed in place, no second PreToolUse handler.
    assert run_cli("init", cwd=project, env=env).returncode == 0
    (pre,) = _ctxd_events(settings)["PreToolUse"]
    assert pre["matcher"] == "Agent|Task"
    doctor = run_cli("doctor", "--json", cwd=project, env=env)
    (check,) = [c for c in json.loads(doctor.stdout) if c["name"] == "recall"]
    assert check["status"] == "OK" and check["detail"].startswith("off")
