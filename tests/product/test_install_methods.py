"""`pip install .`, `pipx install <checkout>` and `uv tool install <checkout>` give one working
command: each is installed from a clean copy of the checkout, offline (dependencies from the
wheelhouse), then used the way the README says — init, a hook event through the exact command
`ctxd init` installed, search, start, status, stop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import checkout_copy, poll
from installed import Dists, Installed, ensure_wheelhouse, offline_pip_env, system_path

SID = "5b1e8a0c-6d2f-4e71-9a3b-2c4d6e8f0a1b"


def _install(method: str, src: Path, root: Path) -> Path:
    """Install the checkout copy `src` with `method`; the folder of its commands."""
    env = offline_pip_env(PATH=system_path())
    env.pop("VIRTUAL_ENV", None)
    if method == "pip":
        subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True)
        argv = [str(root / "venv" / "bin" / "pip"), "install", "-q", str(src)]
        bin_dir = root / "venv" / "bin"
    elif method == "pipx":
        env.update(
            PIPX_HOME=str(root / "pipx"),
            PIPX_BIN_DIR=str(root / "bin"),
            PIPX_MAN_DIR=str(root / "man"),
        )
        argv = [sys.executable, "-m", "pipx", "install", str(src)]
        bin_dir = root / "bin"
    else:
        uv = Path(sys.executable).parent / "uv"
        if not uv.exists():
            pytest.skip("uv is not installed in the test environment (pip install '.[test]')")
        env.update(
            UV_TOOL_DIR=str(root / "uv-tools"),
            UV_TOOL_BIN_DIR=str(root / "bin"),
            UV_CACHE_DIR=str(root / "uv-cache"),
            UV_PYTHON_DOWNLOADS="never",
            UV_PYTHON=sys.executable,
        )
        argv = [str(uv), "tool", "install", "--offline", "--no-index"]
        argv += ["--find-links", env["PIP_FIND_LINKS"], str(src)]
        bin_dir = root / "bin"
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, (method, done.stdout[-2000:], done.stderr[-3000:])
    return bin_dir


@pytest.mark.parametrize("method", ["pip", "pipx", "uv"])
def test_each_install_gives_a_working_command(dists: Dists, tmp_path: Path, method: str) -> None:
    ensure_wheelhouse(dists)
    src = checkout_copy(tmp_path / "checkout")
    product = Installed(_install(method, src, tmp_path / "install"), tmp_path / "home")
    product.home.mkdir()
    project = tmp_path / "proj"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)

    def ctxd(*args: str) -> str:
        done = product.run("ctxd", *args, cwd=project)
        assert done.returncode == 0, (method, args, done.stdout[-2000:], done.stderr[-2000:])
        return done.stdout

    ctxd("init")
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    [handler] = settings["hooks"]["UserPromptSubmit"][0]["hooks"]
    event = {
        "session_id": SID,
        "transcript_path": str(project / "t.jsonl"),
        "cwd": str(project),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "audit the gannet ledger",
    }
    hook = subprocess.run(
        [handler["command"], *handler.get("args", [])],
        input=json.dumps(event),
        cwd=project,
        env=product.env(CLAUDE_PROJECT_DIR=str(project)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert hook.returncode == 0 and hook.stdout == "", hook.stderr
    hits = json.loads(ctxd("search", "gannet", "--json"))
    assert [h["session_id"] for h in hits] == [SID], hits
    ctxd("start")
    pid = json.loads(ctxd("status", "--json"))["daemon"]["pid"]
    assert pid and Path(f"/proc/{pid}").exists()
    ctxd("stop")
    poll(lambda: not Path(f"/proc/{pid}").exists() or _zombie(pid), 30)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


def test_the_hook_runs_without_the_checkout(installed: Installed, workdir: Path) -> None:
    """The hook command init installs points into the venv, not at this checkout."""
    subprocess.run(["git", "init", "-q"], cwd=workdir, check=True)
    done = installed.run("ctxd", "init", cwd=workdir)
    assert done.returncode == 0, done.stderr
    text = (workdir / ".claude" / "settings.local.json").read_text()
    assert str(installed.bin.parent) in text and os.fspath(Path(__file__).parents[2]) not in text
