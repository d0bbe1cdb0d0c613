"""A symlink planted at index.db or at SQLite's files beside it (-wal, -shm) is never followed:
every command refuses it in one line, the SessionStart hook still exits 0, and nothing outside
the state directory is read, created or changed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import hook_env, payload, run_cli, run_hook

SESSION = "0f6a6c8e-1b2d-4c3e-9f40-5a6b7c8d9e01"  # the session of helpers.payload
# Every command that opens the index, read-only or as the writer.
COMMANDS = (
    ("read", "--agent-id", "main"),
    ("status",),
    ("sessions",),
    ("inject",),
    ("ingest",),
    ("compact",),
    ("rebuild",),
    ("resume", SESSION),
    ("search", "login"),
    ("view", SESSION),
)


def _tree(folder: Path) -> dict[str, tuple[bytes, int] | str]:
    """Every path below `folder`: files with their bytes and mtime, links by their kind."""
    tree: dict[str, tuple[bytes, int] | str] = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        tree[rel] = "link" if p.is_symlink() else (p.read_bytes(), p.stat().st_mtime_ns)
    return tree


def _indexed_state(tmp_path: Path) -> Path:
    state = tmp_path / ".ctxd"
    for event in (
        payload(hook_event_name="UserPromptSubmit", prompt="fix the login bug"),
        payload(tool_name="Bash", tool_input={"command": "pytest -q"}, tool_use_id="toolu_1"),
    ):
        assert run_hook(event, hook_env(state)).returncode == 0
    r = run_cli("ingest", state_dir=state)
    assert r.returncode == 0, r.stderr
    return state


@pytest.mark.parametrize("name", ["index.db", "index.db-wal", "index.db-shm"])
def test_a_linked_index_file_is_refused_by_every_command(tmp_path: Path, name: str) -> None:
    state = _indexed_state(tmp_path)
    out = tmp_path / "outside"
    out.mkdir()
    if name == "index.db":
        # A real index outside: following the link would read it and write its -wal/-shm.
        shutil.copy(state / "index.db", out / "real.db")
        (state / "index.db").unlink()
        (state / name).symlink_to(out / "real.db")
    else:
        (out / "victim").write_text("outside file: must stay as it is\n")
        (state / name).symlink_to(out / "victim")
    before = _tree(out)
    for args in COMMANDS:
        r = run_cli(*args, state_dir=state)
        assert r.returncode != 0, (args, r.stdout)
        assert r.stderr.count("\n") == 1, (args, r.stderr)
        assert f"{name} is a symlink" in r.stderr, (args, r.stderr)
        assert "internal error" not in r.stderr
    start = run_hook(payload(hook_event_name="SessionStart", source="compact"), hook_env(state))
    assert start.returncode == 0
    # The daemon refuses it too, and says why in its log (`ctxd start` detaches it from the
    # terminal and points there).
    daemon = run_cli("start", state_dir=state)
    assert daemon.returncode != 0 and "ctxd.log" in daemon.stderr, daemon.stderr
    assert f"{name} is a symlink" in (state / "ctxd.log").read_text()
    assert _tree(out) == before
    assert (state / name).is_symlink()  # refused, not removed: the user decides
