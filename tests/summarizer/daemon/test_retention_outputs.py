"""Index retention also removes what ctxd built from an expired session outside the index:
its `ctxd view` page, its handoff queue and agents' accounts of runs as old."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from helpers import run_cli

from ctxd_hook import hook
from indexer.index import store
from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up, writer_lock
from summarizer.daemon.retention import prune_index
from summarizer.handoff.queue import put, write_account

DAY_NS = 86400 * 1_000_000_000


def _prompt(state: Path, ts_ns: int, session: str, n: int) -> None:
    spool = state / "spool"
    spool.mkdir(parents=True, exist_ok=True, mode=0o700)
    payload = json.dumps(
        {"session_id": session, "hook_event_name": "UserPromptSubmit", "cwd": "/p",
         "prompt": f"the words of {session}"}
    ).encode()
    hook.append_line(str(spool), hook.segment_name(ts_ns), hook.build_line(payload, ts_ns, n))


def test_expired_sessions_lose_their_pages_queues_and_accounts(tmp_path: Path) -> None:
    state = tmp_path / "state"
    paths = StatePaths(state)
    now = time.time_ns()
    _prompt(state, now - 40 * DAY_NS, "ancient", 1)
    _prompt(state, now - 1000, "fresh", 2)
    catch_up(paths)
    for sid in ("ancient", "fresh"):
        out = run_cli("view", sid, state_dir=state)
        assert out.returncode == 0, out.stderr
        assert (state / "pages" / f"{sid}.html").is_file()
        put(str(state), sid, "general-purpose", f"toolu_{sid}", "", "arch-001", "do it")
    write_account(str(state), "old-agent", "what old-agent did long ago\n")
    old = time.time() - 40 * 86400
    os.utime(state / "handoff" / "agents" / "old-agent.md", (old, old))
    write_account(str(state), "new-agent", "what new-agent did today\n")
    with writer_lock(paths):
        conn = store.connect(paths.index_db)
        try:
            assert prune_index(conn, paths, index_days=30) == (1, 1)
        finally:
            conn.close()
    assert not (state / "pages" / "ancient.html").exists()
    assert not (state / "handoff" / "sessions" / "ancient").exists()
    assert not (state / "handoff" / "agents" / "old-agent.md").exists()
    assert (state / "pages" / "fresh.html").is_file()
    assert (state / "handoff" / "sessions" / "fresh").is_dir()
    assert (state / "handoff" / "agents" / "new-agent.md").is_file()


def test_retention_deletes_nothing_through_a_symlinked_folder(tmp_path: Path) -> None:
    state = tmp_path / "state"
    paths = StatePaths(state)
    now = time.time_ns()
    _prompt(state, now - 40 * DAY_NS, "ancient", 1)
    catch_up(paths)
    outside = tmp_path / "outside"
    for part in ("pages", "handoff"):  # (a linked sessions/ or resume/ stops the rebuild)
        target = outside / part
        (target / "ancient" / "sessions" / "ancient").mkdir(parents=True)
        (target / "ancient.html").write_text("not ctxd's\n")
        (target / "sessions" / "ancient").mkdir(parents=True)
        if (state / part).is_dir():
            for child in (state / part).iterdir():
                child.rename(tmp_path / f"moved-{part}-{child.name}")
            (state / part).rmdir()
        (state / part).symlink_to(target)
    before = sorted(str(p.relative_to(outside)) for p in outside.rglob("*"))
    with writer_lock(paths):
        conn = store.connect(paths.index_db)
        try:
            assert prune_index(conn, paths, index_days=30) == (1, 1)
        finally:
            conn.close()
    assert sorted(str(p.relative_to(outside)) for p in outside.rglob("*")) == before
