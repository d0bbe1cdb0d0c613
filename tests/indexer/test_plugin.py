"""The plugin's manifests match the code, and its hook runs from a bare copy of the repository."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from summarizer.cli.install import EVENTS, HookCommand, ctxd_hook_spec
from tests.helpers import REPO, clean_env, payload

PLUGIN_HOOK = HookCommand(("python3", "-I", "-S", "${CLAUDE_PLUGIN_ROOT}/indexer/run_hook.py"))


def _version() -> str:
    found = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert found
    return found.group(1)


def test_hooks_json_is_what_init_installs_with_the_plugin_root() -> None:
    doc = json.loads((REPO / "hooks" / "hooks.json").read_text())
    assert doc["hooks"] == ctxd_hook_spec(PLUGIN_HOOK)
    assert set(doc["hooks"]) == set(EVENTS)


def test_manifests_name_and_version() -> None:
    plugin = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    assert plugin["name"] == "ctxd" and plugin["version"] == _version()
    [entry] = market["plugins"]
    assert (entry["name"], entry["source"], entry["version"]) == ("ctxd", "./", _version())
    assert market["name"] == "ctxd" and market["owner"]["name"]


def _plugin_copy(dest: Path) -> Path:
    """Only what the hook needs at run time: no installed package anywhere."""
    shutil.copytree(
        REPO / "indexer", dest / "indexer", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(
        REPO / "summarizer", dest / "summarizer", ignore=shutil.ignore_patterns("__pycache__")
    )
    return dest


def _hook(root: Path, project: Path, data: bytes, path: str) -> subprocess.CompletedProcess[bytes]:
    env = clean_env(CLAUDE_PLUGIN_ROOT=str(root), CLAUDE_PROJECT_DIR=str(project), PATH=path)
    return subprocess.run(
        [sys.executable, "-I", "-S", str(root / "indexer" / "run_hook.py")],
        input=data,
        env=env,
        capture_output=True,
        check=False,
        timeout=60,
    )


def test_plugin_hook_records_and_gives_the_install_hint_once(tmp_path: Path) -> None:
    root = _plugin_copy(tmp_path / "plugin")
    project = tmp_path / "proj"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    start = payload(session_id="s-1", hook_event_name="SessionStart", source="startup")
    first = _hook(root, project, start, "/usr/bin:/bin")
    assert first.returncode == 0 and first.stderr == b""
    out = json.loads(first.stdout)
    assert "pipx install ctxd-claude" in out["systemMessage"]
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "not installed" in out["hookSpecificOutput"]["additionalContext"]
    again = _hook(root, project, start, "/usr/bin:/bin")
    assert again.returncode == 0 and again.stdout == b""  # once per project
    prompt = payload(session_id="s-1", hook_event_name="UserPromptSubmit", prompt="hi")
    assert _hook(root, project, prompt, "/usr/bin:/bin").stdout == b""
    lines = b"".join(p.read_bytes() for p in (project / ".ctxd" / "spool").glob("*.jsonl"))
    events = [json.loads(line)["event"]["hook_event_name"] for line in lines.splitlines()]
    assert events == ["SessionStart", "SessionStart", "UserPromptSubmit"]
    # No `ctxd init` put .ctxd/ in .gitignore: the state dir ignores itself.
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == ""


def test_plugin_hook_hands_session_start_to_the_installed_command(tmp_path: Path) -> None:
    root = _plugin_copy(tmp_path / "plugin")
    project = tmp_path / "proj"
    project.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ctxd").symlink_to(Path(sys.executable).parent / "ctxd")
    path = f"{bin_dir}:/usr/bin:/bin"
    state = project / ".ctxd"
    # A constraint in the project's memory: a new session starts with it.
    emit = subprocess.run(
        [str(bin_dir / "ctxd"), "emit", "constraint", "never touch the billing module"],
        env=clean_env(CTXD_HOME=str(state)),
        capture_output=True,
        text=True,
        check=False,
    )
    assert emit.returncode == 0, emit.stderr
    compact = subprocess.run(
        [str(bin_dir / "ctxd"), "compact"], env=clean_env(CTXD_HOME=str(state)), check=False
    )
    assert compact.returncode == 0
    start = payload(session_id="s-2", hook_event_name="SessionStart", source="startup")
    done = _hook(root, project, start, path)
    assert done.returncode == 0
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "never touch the billing module" in context
    assert not (state / "install-hint-shown").exists()
