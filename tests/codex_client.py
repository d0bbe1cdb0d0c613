"""The real Codex CLI (pinned) for tests: installed from npm, run headless against the stand-in."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import clean_env

VERSION = "0.171.0"
CACHE = Path(os.environ.get("CTXD_TEST_CACHE", Path.home() / ".cache" / "ctxd-test"))
CLI_DIR = CACHE / f"codex-{VERSION}"
CODEX = CLI_DIR / "node_modules" / ".bin" / "codex"
# A model whose tools Codex knows without asking the API: exec_command and apply_patch.
MODEL = "gpt-5.5"
# Past this many input tokens Codex compacts before its next request (the stand-in reports
# 200,000 on the turn that should trigger it).
COMPACT_LIMIT = 100_000


def codex_cli() -> Path:
    """The pinned CLI (installed by .ci/run; installed here if missing); skip if npm is down."""
    if not CODEX.exists() and shutil.which("npm"):
        CLI_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--prefix", str(CLI_DIR), "--no-audit", "--no-fund",
             f"@openai/codex@{VERSION}"],
            capture_output=True, timeout=600, check=False,
        )  # fmt: skip
    if not CODEX.exists():
        pytest.skip(f"npm could not install @openai/codex@{VERSION} (unreachable?)")
    return CODEX


def codex_env(home: Path, codex_home: Path, **extra: str) -> dict[str, str]:
    """The environment of the CLI and of ctxd's commands: HOME and CODEX_HOME in the test, no
    OpenAI, Codex, Claude or ctxd setting of the machine running the tests."""
    env = {
        k: v
        for k, v in clean_env().items()
        if not k.startswith(("OPENAI_", "CODEX_", "ANTHROPIC_", "CLAUDE", "CTXD"))
    }
    env.update(HOME=str(home), CODEX_HOME=str(codex_home), SHELL="/bin/bash",
               STANDIN_API_KEY="test-key", **extra)  # fmt: skip
    return env


def write_config(codex_home: Path, port: int, project: Path) -> None:
    """Codex's config.toml: the stand-in as the model provider, the project trusted (what a
    user's answer to Codex's first "trust this folder?" writes), and no traffic but to the
    stand-in: no update check, no analytics, and no plugins (whose marketplace Codex looks up
    on github.com at start)."""
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        f'model = "{MODEL}"\nmodel_provider = "standin"\n'
        f"model_auto_compact_token_limit = {COMPACT_LIMIT}\n"
        "check_for_update_on_startup = false\n\n"
        "[analytics]\nenabled = false\n\n[features]\nplugins = false\n\n"
        f'[projects."{project}"]\ntrust_level = "trusted"\n\n'
        f'[model_providers.standin]\nname = "standin"\n'
        f'base_url = "http://127.0.0.1:{port}/v1"\nwire_api = "responses"\n'
        f'env_key = "STANDIN_API_KEY"\n'
    )


def run_codex(project: Path, env: dict[str, str], prompt: str, *, resume: str = "") -> str:
    """One headless turn (`codex exec`, or `codex exec resume` of a thread); its thread id.

    No approval prompts and no sandbox (the test machine has none to offer), and no bypass of
    hook trust: the hooks run because `ctxd init --host codex` trusted them.
    """
    argv = [str(codex_cli()), "exec", "--json", "--dangerously-bypass-approvals-and-sandbox"]
    argv += ["resume", resume, prompt] if resume else [prompt]
    done = subprocess.run(argv, cwd=project, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    started = [e["thread_id"] for e in events if e.get("type") == "thread.started"]
    assert done.returncode == 0 and started, (done.returncode, done.stderr[-3000:])
    return str(started[0])
