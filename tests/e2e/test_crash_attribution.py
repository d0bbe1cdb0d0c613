"""A restart anywhere in a catch-up leaves the same agents and views as an uninterrupted one.

The spool (tests/e2e/agent_spool.py) makes attribution guess: parallel subagents of one type,
Claude Code's ids seen in any order, agents interrupted before they ran, subagents whose Agent
call the hooks never saw. It is written to two state directories. One is indexed by a single
`ctxd ingest`; in the other the daemon (`ctxd run`, smaller batches) catches up and is stopped
again and again, by SIGKILL or SIGTERM, each time the index has grown by a random part of what
is left, then `ctxd ingest` finishes. Then every entry (by its spool position) must be under the
same agent in both, and every view file (empty ones included) must hold the same bytes.
"""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from agent_spool import generate
from test_crash import _cmd, _env, indexed_count, run_to_end

from ctxd_hook.hook import append_line
from indexer.paths import StatePaths


def _write(state: Path, lines: list[tuple[str, bytes]], config: str) -> StatePaths:
    paths = StatePaths(state)
    paths.ensure()
    paths.config.write_text(config)
    for name, data in lines:
        append_line(str(paths.spool), name, data)
    return paths


def _stop_at(paths: StatePaths, target: int, sig: signal.Signals) -> bool:
    """Run the daemon until the index holds `target` entries, then send `sig`; True if it was
    still catching up then."""
    proc = subprocess.Popen(
        _cmd("run", paths.root), env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        while proc.poll() is None and indexed_count(paths) < target:
            time.sleep(0.005)
        stopped = proc.poll() is None
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode in (0, -signal.SIGKILL), err.decode()
    return stopped


def _agents(paths: StatePaths) -> dict[tuple[str, int], str]:
    """The agent of every entry, by the spool position it came from."""
    conn = sqlite3.connect(f"file:{paths.index_db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT f.name, e.offset, e.agent_id FROM entries e JOIN files f USING(file_id)"
        ).fetchall()
    finally:
        conn.close()
    return {(name, offset): agent for name, offset, agent in rows}


def _views(paths: StatePaths) -> dict[str, bytes]:
    return {str(p.relative_to(paths.sessions)): p.read_bytes() for p in paths.sessions.rglob("*")
            if p.is_file()}  # fmt: skip


def _restart_test(tmp_path: Path, events: int, restarts: int, seed: int) -> None:
    spool = generate(events, seed)
    clean = _write(tmp_path / "clean", spool.lines, "")
    run_to_end("ingest", clean.root)
    restarted = _write(
        tmp_path / "restarted",
        spool.lines,
        "[ingest]\nbatch_lines = 250\n\n[daemon]\nrescan_interval_s = 0.2\n",
    )
    rng = random.Random(seed)
    stops = 0
    for i in range(restarts):
        done = indexed_count(restarted)
        if done >= events - 250:
            break
        target = done + rng.randrange(1, events - done - 250)
        sig = signal.SIGKILL if i % 2 == 0 else signal.SIGTERM
        stops += _stop_at(restarted, target, sig)
    run_to_end("ingest", restarted.root)
    assert stops >= restarts // 2, f"only {stops} of {restarts} stops came mid-catch-up"

    want, got = _agents(clean), _agents(restarted)
    assert len(want) == events
    moved = {k: (want[k], got.get(k)) for k in want if got.get(k) != want[k]}
    assert not moved, f"{len(moved)} entries under another agent, e.g. {list(moved.items())[:3]}"
    assert got.keys() == want.keys()
    want_views, got_views = _views(clean), _views(restarted)
    differ = sorted(k for k in want_views.keys() | got_views.keys()
                    if want_views.get(k) != got_views.get(k))  # fmt: skip
    assert not differ, f"{len(differ)} of {len(want_views)} view files differ: {differ[:5]}"


def test_restarts_mid_catch_up_attribute_as_a_clean_ingest(tmp_path: Path) -> None:
    _restart_test(tmp_path, events=5000, restarts=2, seed=2)


@pytest.mark.full
def test_ten_restarts_of_a_100k_catch_up_attribute_as_a_clean_ingest(tmp_path: Path) -> None:
    _restart_test(tmp_path, events=100_000, restarts=10, seed=22)
