"""First use under concurrency: many `ctxd` processes opening a new state directory at once."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from helpers import REPO, clean_env, hook_env, payload, query, run_hook

PROCESSES = 10


def _start(args: list[str], state_dir: Path) -> subprocess.Popen[str]:
    env = clean_env(CTXD_HOME=str(state_dir), PYTHONPATH=str(REPO))
    return subprocess.Popen(
        [sys.executable, "-m", "summarizer.cli.app", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _run_together(commands: list[list[str]], state_dir: Path) -> list[tuple[int, str]]:
    procs = [_start(args, state_dir) for args in commands]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        results.append((p.returncode, err + out if p.returncode else err))
    return results


def test_ten_ingests_at_once_on_a_new_state_dir(tmp_path: Path) -> None:
    for attempt in range(3):  # the race is timing-dependent: give it several chances to show
        state_dir = tmp_path / f"state{attempt}"
        env = hook_env(state_dir)
        for n in range(20):
            assert run_hook(payload(tool_use_id=f"toolu_{n:03d}"), env).returncode == 0
        results = _run_together([["ingest"]] * PROCESSES, state_dir)
        assert [(code, err) for code, err in results if code != 0] == []
        assert query(state_dir, "SELECT count(*), count(DISTINCT tool_use_id) FROM entries") == [
            (20, 20)
        ]
        assert query(state_dir, "PRAGMA user_version") == [(1,)]


def test_readers_and_writers_at_once_on_a_new_state_dir(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    assert run_hook(payload(), hook_env(state_dir)).returncode == 0
    commands = [["ingest"], ["status"], ["read", "--agent-id", "main"], ["status", "--json"]] * 3
    results = _run_together(commands, state_dir)
    assert [(code, err) for code, err in results if code != 0 or "schema" in err] == []
    assert os.stat(state_dir / "index.db").st_mode & 0o077 == 0


def test_ingest_waits_while_the_first_writer_has_not_created_the_index(tmp_path: Path) -> None:
    from indexer.config import Config
    from indexer.paths import StatePaths
    from indexer.writer.catch_up import open_writer, writer_lock

    state_dir = tmp_path / "state"
    assert run_hook(payload(tool_use_id="toolu_001"), hook_env(state_dir)).returncode == 0
    paths = StatePaths(state_dir)
    with writer_lock(paths):  # the first writer: lock taken, index.db not yet created
        proc = _start(["ingest"], state_dir)
        # Give the command time to find the lock held and the index missing (it must wait,
        # not give up): stop waiting as soon as it exits, at the latest after 3 s.
        deadline = time.monotonic() + 3.0
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        writer = open_writer(paths, Config())
        try:
            writer.pass_once()
        finally:
            writer.close()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err + out
    assert "caught up" in out
