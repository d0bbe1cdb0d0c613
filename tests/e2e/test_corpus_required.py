"""Without the real-payload corpus, its tests skip locally with a reason, and CI fails at once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers import REPO

CORPUS_TEST = (
    "tests/summarizer/resume/test_todos.py::test_corpus_todowrite_lists_match_the_last_call"
)


def _pytest(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("CI", "CTXD_TEST_CORPUS")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", CORPUS_TEST],
        env={**base, "CTXD_TEST_CORPUS": str(tmp_path / "no-corpus"), **env},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_missing_corpus_skips_locally_with_its_reason(tmp_path: Path) -> None:
    done = _pytest(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 skipped" in done.stdout
    assert f"corpus not found at {tmp_path / 'no-corpus'}" in done.stdout


def test_missing_corpus_fails_the_run_in_ci(tmp_path: Path) -> None:
    done = _pytest(tmp_path, CI="true")
    assert done.returncode != 0
    assert "CI=true but the real-payload corpus is missing" in done.stdout + done.stderr
    assert "skipped" not in done.stdout


def test_ci_script_checks_the_corpus_before_pytest() -> None:
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    check = next(i for i, line in enumerate(lines) if '"$corpus/hooks"' in line)
    assert lines[check - 1] == 'corpus="${CTXD_TEST_CORPUS:-../shared/corpus}"'
    assert lines[check].startswith('test -d "$corpus/hooks" ||')
    assert "exit 1" in lines[check]
    assert check < len(lines) - 1 and "pytest" in lines[-1]
