"""Commands facing a damaged or locked index print one line that says what to do, no traceback."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from indexer.paths import StatePaths
from tests.helpers import run_cli


def _tableless_index(root: Path) -> StatePaths:
    # The right schema version but no tables: what a half-restored or hand-edited copy looks
    # like. It passes the version check, so the first query is what fails.
    paths = StatePaths(root)
    paths.ensure()
    conn = sqlite3.connect(paths.index_db)
    conn.execute("PRAGMA user_version=1")
    conn.close()
    return paths


@pytest.mark.parametrize(
    "command",
    [["status"], ["sessions"], ["read", "--agent-id", "main"]],
    ids=lambda c: c[0],
)
def test_a_damaged_index_gives_one_line_with_the_remedy(tmp_path: Path, command: list[str]) -> None:
    paths = _tableless_index(tmp_path / "state")
    done = run_cli(*command, "--state-dir", str(paths.root))
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "internal error" not in lines[0]
    assert "damaged" in lines[0] and "ctxd rebuild" in lines[0], lines[0]
