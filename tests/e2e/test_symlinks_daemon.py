"""Planted symlinks with a running daemon: hooks, the daemon's jobs and every command that
writes or deletes leave everything outside the state directory as it was."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from helpers import hook_env, payload, poll, query, run_cli, run_hook

SESSION = "0f6a6c8e-1b2d-4c3e-9f40-5a6b7c8d9e01"  # the session of helpers.payload
OTHER = "7d1c2b3a-0000-4000-8000-00000000beef"  # a session whose folders are planted links

_CONFIG = """\
[daemon]
rescan_interval_s = 0.2
heartbeat_interval_s = 0.5
log_max_bytes = 2000
log_backups = 2
[retention]
spool_hours = 0.0001
interval_s = 0.5
"""


def _outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    (out / "folder").mkdir(parents=True)
    for name in (
        "victim.jsonl",
        "running-summary.json",
        "20200101T00.jsonl",
        "ctxd.log.1",
        "daemon.json",
        "daemon.sock",
        "folder/keep.txt",
    ):
        (out / name).write_text(f"outside file {name}: must stay as it is\n")
    return out


def _tree(folder: Path) -> dict[str, tuple[bytes, int] | str]:
    """Every path below `folder` with its bytes and mtime (files) or its kind."""
    tree: dict[str, tuple[bytes, int] | str] = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        if p.is_symlink():
            tree[rel] = "link"
        elif p.is_dir():
            tree[rel] = f"dir {p.stat().st_mtime_ns}"
        else:
            tree[rel] = (p.read_bytes(), p.stat().st_mtime_ns)
    return tree


def _plant(state: Path, out: Path) -> None:
    """A symlink at every directory and file the hook, the daemon and the commands write or
    delete (those that exist already are replaced by the link)."""
    links = {
        "sessions/evil": out,
        f"sessions/{OTHER}": out,
        f"sessions/{SESSION}/linked.jsonl": out / "victim.jsonl",
        f"resume/{OTHER}": out / "folder",
        "spool/20200101T00.jsonl": out / "20200101T00.jsonl",
        "context/running-summary.json": out / "running-summary.json",
        "views.new": out,
        "daemon.sock": out / "daemon.sock",
        "ctxd.log.1": out / "ctxd.log.1",
        "ctxd.log.2": out / "folder",
        ".daemon.json.1.tmp": out / "daemon.json",
    }
    for rel, target in links.items():
        link = state / rel
        link.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if link.exists() and not link.is_dir():
            link.unlink()
        link.symlink_to(target, target_is_directory=target.is_dir())


def _entries(state: Path, session: str = "%") -> int:
    """Entries indexed so far (0 while the daemon is still creating the index)."""
    try:
        sql = "SELECT count(*) FROM entries WHERE session_id LIKE ?"
        return int(query(state, sql, (session,))[0][0])
    except sqlite3.Error:
        return 0


def _hook(state: Path, **fields: object) -> None:
    r = run_hook(payload(**fields), hook_env(state))
    assert r.returncode == 0
    assert b"outside file" not in r.stdout


def test_nothing_outside_changes_with_a_running_daemon(tmp_path: Path) -> None:
    out = _outside(tmp_path)
    state = tmp_path / ".ctxd"
    state.mkdir(mode=0o700)
    (state / "config.toml").write_text(_CONFIG)
    _hook(state, hook_event_name="UserPromptSubmit", prompt="fix the login bug")
    _hook(state, tool_name="Bash", tool_input={"command": "pytest -q"}, tool_use_id="toolu_1")
    started = run_cli("start", state_dir=state)
    assert started.returncode == 0, started.stderr
    try:
        poll(lambda: _entries(state) >= 2, timeout=60)
        _plant(state, out)
        before = _tree(out)
        # Hooks for both sessions while the daemon indexes, writes views, compacts and
        # runs retention every half second.
        for i in range(6):
            _hook(
                state,
                tool_name="Bash",
                tool_input={"command": f"make {i}"},
                tool_use_id=f"toolu_a{i}",
            )
            _hook(
                state,
                session_id=OTHER,
                hook_event_name="UserPromptSubmit",
                prompt=f"other session prompt {i}",
            )
        _hook(state, hook_event_name="PreCompact", trigger="manual", custom_instructions="")
        _hook(
            state,
            session_id=OTHER,
            hook_event_name="PreCompact",
            trigger="auto",
            custom_instructions="",
        )
        _hook(state, hook_event_name="SessionStart", source="compact")
        _hook(state, session_id=OTHER, hook_event_name="SessionStart", source="compact")
        for args in (
            ("ingest",),
            ("compact",),
            ("status",),
            ("doctor",),
            ("inject",),
            ("read", "--agent-id", "main", "--session", SESSION),
            ("resume", SESSION),
            ("sessions",),
        ):
            r = run_cli(*args, state_dir=state)
            assert "outside file" not in r.stdout + r.stderr, (args, r.stdout, r.stderr)
        # The daemon went on: it indexed every event spooled after the links were planted.
        poll(lambda: _entries(state, SESSION) >= 9, timeout=60)
        assert _tree(out) == before
    finally:
        stopped = run_cli("stop", state_dir=state)
    assert stopped.returncode == 0, stopped.stderr
    assert _tree(out) == before
    # The commands that need the writer lock (the daemon holds it while it runs).
    # OTHER's views are skipped (they would go through a link), the others rebuilt.
    for args in (("rebuild",), ("forget", OTHER), ("rebuild",), ("ingest",)):
        r = run_cli(*args, state_dir=state)
        assert r.returncode == 0, (args, r.stderr)
    _hook(state, hook_event_name="SessionStart", source="resume")
    assert _tree(out) == before
    assert not (state / "sessions" / OTHER).exists()  # forget removed the links themselves
    assert not (state / "resume" / OTHER).exists()
    assert (state / "sessions" / SESSION / "main.jsonl").is_file()
    log = (state / "ctxd.log").read_bytes() if (state / "ctxd.log").is_file() else b""
    assert b"outside file" not in log
    assert os.stat(state).st_mode & 0o777 == 0o700
