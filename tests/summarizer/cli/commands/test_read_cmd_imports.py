"""`ctxd inject` and `ctxd status` on current context files import only what they use.

Whole-process time of these commands is mostly imports, so a module pulled in for nothing (the
package metadata for `--version`, the tokenizer, the ingest code) shows here, not in a timing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, clean_env, run_cli

# Runs one CLI command in a fresh interpreter and reports the modules it imported beyond those
# the interpreter had already loaded before the command module was imported.
_RUNNER = """
import json, sys
before = set(sys.modules)
from summarizer.cli.app import main
code = main(sys.argv[1:])
sys.stdout.flush()
print(json.dumps({"code": code, "new": sorted(set(sys.modules) - before)}), file=sys.stderr)
"""

# Needed by neither command when nothing must be recomputed: the package metadata (only
# `--version` reads it; it brings email, zipfile, csv and socket), the tokenizer, the daemon's
# libraries, the JSON decoder of the spool and the ingest path.
NEEDLESS = (
    "importlib.metadata",
    "email",
    "zipfile",
    "csv",
    "socket",
    "tiktoken",
    "tiktoken_ext",
    "watchdog",
    "apscheduler",
    "msgspec",
    "indexer.ingest.ingestor",
    "indexer.writer.catch_up",
    "summarizer.memory.inject",
)


def imported_by(*argv: str) -> list[str]:
    """The modules `ctxd ARGV` imports (it must succeed)."""
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, *argv],
        env=clean_env(PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, done.stderr
    return list(report["new"])


def needless(modules: list[str]) -> list[str]:
    return [m for m in modules if m in NEEDLESS or m.split(".")[0] in NEEDLESS]


@pytest.fixture(scope="module")
def compacted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose context files are current: one decision emitted, indexed, compacted."""
    state = tmp_path_factory.mktemp("project") / "state"
    emit = run_cli("emit", "decision", "Stream rows with csv", "--state-dir", str(state))
    assert emit.returncode == 0, emit.stderr
    compact = run_cli("compact", "--state-dir", str(state))
    assert compact.returncode == 0, compact.stderr
    return state


@pytest.mark.parametrize("command", [("inject",), ("status",), ("status", "--json")])
def test_a_read_command_on_current_files_imports_nothing_needless(
    compacted: Path, command: tuple[str, ...]
) -> None:
    modules = imported_by(*command, "--state-dir", str(compacted))
    assert "summarizer.cli.app" in modules  # the runner saw the command's own imports
    assert needless(modules) == []


def test_version_still_reads_the_installed_metadata() -> None:
    # The metadata is read when --version is asked for, and then it is imported.
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, "--version"],
        env=clean_env(PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ctxd ") and done.stdout.strip() != "ctxd"
