"""Real temporary git repositories and task environments for the task cache tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from indexer.config import TasksConfig
from summarizer.tasks.env import TaskEnv

STANDARD = """# Global standards

Intro line.

## Evidence Requirements

Every change ships with a test that fails without it. Evidence lives in files.

More detail here.

## Governance

Decisions are recorded.
"""

TASK_YAML = """id: TASK-0824
title: Cache the settings
priority: P1
area: backend
description: |
  # a YAML comment line
  Settings load on every visit; cache them.
scope:
  in: [src/a.py, src/b.py, src/c.py]
  out: [docs]
acceptance_criteria:
  - settings load once
standards:
  - file: standards/global.md
    section: Evidence Requirements
qa:
  commands: [pytest -q]
"""


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return out.stdout


def make_repo(root: Path, *, crlf: bool = False) -> Path:
    """A repository with three source files, a standards file and a committed task file."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "tester")
    (repo / "src").mkdir()
    (repo / "standards").mkdir()
    (repo / "tasks").mkdir()
    for name in ("a", "b", "c"):
        (repo / "src" / f"{name}.py").write_text(
            "".join(f"{name}{i} = {i}\n" for i in range(1, 21))
        )
    (repo / "standards" / "global.md").write_text(STANDARD)
    (repo / "tasks" / "TASK-0824.task.yaml").write_text(TASK_YAML)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return repo


def task_env(repo: Path, state: Path, **config: object) -> tuple[TaskEnv, list[str]]:
    """A TaskEnv on `repo` with its state in `state`; the list collects warnings."""
    warnings: list[str] = []
    cfg = TasksConfig(**config)  # type: ignore[arg-type]
    env = TaskEnv(state_root=state, repo=repo, config=cfg, actor="tester", warn=warnings.append)
    return env, warnings


def edit(repo: Path, rel: str, line: int, text: str) -> None:
    """Replace one line (1-based) of a file, keeping its line endings."""
    path = repo / rel
    data = path.read_bytes()
    eol = b"\r\n" if b"\r\n" in data else b"\n"
    lines = data.split(eol)
    lines[line - 1] = text.encode()
    path.write_bytes(eol.join(lines))


def ctxd(
    *args: str, cwd: Path, state: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The real `ctxd` CLI as a subprocess."""
    import os

    full = {k: v for k, v in os.environ.items() if k not in ("CTXD_HOME", "CLAUDE_PROJECT_DIR")}
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "summarizer.cli.app", *args, "--state-dir", str(state)],
        cwd=cwd,
        env={**full, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
