"""indexer/paths.py: the id checks that guard every path, the layout, and private directories."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from indexer.errors import InvalidIdError, StateDirError
from indexer.paths import (
    StatePaths,
    check_session_id,
    ensure_private_dir,
    is_valid_session_id,
    is_valid_view_name,
    resolve_state_paths,
)

GOOD_SESSION_IDS = [
    "0f3c2a4e-8b1d-4c7e-9a2f-6d5e4c3b2a10",
    "a",
    "s1",
    "run.2026-11-25_x",
    "A" * 128,
    "main",  # a view name, but a valid session directory
]
BAD_SESSION_IDS = [
    "",
    ".",
    "..",
    ".hidden",
    "-starts-with-dash",
    "_underscore",
    "a/b",
    "../etc",
    "a\\b",
    "a b",
    "a\x00b",
    "é",
    "A" * 129,
    "spool",
    "SESSIONS",
    "index.db",
    "Index.DB-wal",
    "daemon.lock",
    "config.toml",
    "resume",
    "latest.json",
]


@pytest.mark.parametrize("sid", GOOD_SESSION_IDS)
def test_good_session_ids_pass(sid: str) -> None:
    assert is_valid_session_id(sid)
    assert check_session_id(sid) == sid


@pytest.mark.parametrize("sid", BAD_SESSION_IDS)
def test_bad_session_ids_are_refused(sid: str) -> None:
    assert not is_valid_session_id(sid)
    with pytest.raises(InvalidIdError, match="invalid session id"):
        check_session_id(sid)


def test_the_refusal_message_says_what_is_allowed_and_clips_a_long_id() -> None:
    with pytest.raises(InvalidIdError) as err:
        check_session_id("/" * 500)
    message = str(err.value)
    assert "letters, digits, '.', '_' or '-'" in message
    assert "1-128 characters" in message
    assert "/" * 80 in message
    assert "/" * 81 not in message


@pytest.mark.parametrize(
    "name", ["main", "ab", "a1", "agent-7", "worker_2", "a" * 64, "Explore-9f"]
)
def test_good_view_names_pass(name: str) -> None:
    assert is_valid_view_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "",
        "a",  # one character: the rule wants at least two
        "a" * 65,
        "-ab",
        "ab-",
        "a.b",
        "a/b",
        "..",
        "a b",
        "todos",
        "TODOS",
        "agent-instructions",
        "all-agent-instructions",
    ],
)
def test_bad_view_names_are_refused(name: str) -> None:
    assert not is_valid_view_name(name)


def test_layout_under_the_root(tmp_path: Path) -> None:
    p = StatePaths(tmp_path)
    assert p.spool == tmp_path / "spool"
    assert p.index_db == tmp_path / "index.db"
    assert p.sessions == tmp_path / "sessions"
    assert p.context == tmp_path / "context"
    assert p.resume == tmp_path / "resume"
    assert p.lock == tmp_path / "daemon.lock"
    assert p.daemon_json == tmp_path / "daemon.json"
    assert p.log == tmp_path / "ctxd.log"
    assert p.config == tmp_path / "config.toml"
    assert p.session_dir("s1") == tmp_path / "sessions" / "s1"
    with pytest.raises(InvalidIdError):
        p.session_dir("../s1")


def test_equality_and_hash_follow_the_root(tmp_path: Path) -> None:
    assert StatePaths(tmp_path) == StatePaths(tmp_path)
    assert StatePaths(tmp_path) != StatePaths(tmp_path / "other")
    assert StatePaths(tmp_path) != tmp_path
    assert len({StatePaths(tmp_path), StatePaths(tmp_path)}) == 1


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_ensure_creates_the_tree_private(tmp_path: Path) -> None:
    old = os.umask(0)  # even with a permissive umask the directories are 0700
    try:
        StatePaths(tmp_path / "state").ensure()
    finally:
        os.umask(old)
    for name in ("", "spool", "sessions", "context", "resume"):
        assert _mode(tmp_path / "state" / name) == 0o700, name


def test_ensure_is_idempotent(tmp_path: Path) -> None:
    p = StatePaths(tmp_path / "state")
    p.ensure()
    (p.spool / "keep").write_text("x")
    p.ensure()
    assert (p.spool / "keep").read_text() == "x"


def test_a_symlink_in_place_of_a_state_directory_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = tmp_path / "state"
    root.mkdir()
    (root / "spool").symlink_to(elsewhere)
    with pytest.raises(StateDirError, match="symlink"):
        StatePaths(root).ensure()


def test_a_file_in_place_of_a_directory_is_a_state_dir_error(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("not a directory")
    with pytest.raises(StateDirError, match="cannot create"):
        ensure_private_dir(tmp_path / "state" / "spool")


def test_resolve_prefers_an_explicit_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXD_HOME", str(tmp_path / "home"))
    assert resolve_state_paths(str(tmp_path / "explicit")).root == tmp_path / "explicit"


def test_resolve_uses_ctxd_home_then_project_then_git_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "deep").mkdir(parents=True)
    deep = str(repo / "src" / "deep")
    monkeypatch.delenv("CTXD_HOME", raising=False)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    assert resolve_state_paths(None, deep).root == repo / ".ctxd"
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path / "proj"))
    assert resolve_state_paths(None, deep).root == tmp_path / "proj" / ".ctxd"
    monkeypatch.setenv("CTXD_HOME", str(tmp_path / "home"))
    assert resolve_state_paths(None, deep).root == tmp_path / "home"


def test_resolve_outside_a_repository_uses_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CTXD_HOME", raising=False)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    plain = tmp_path / "plain"
    plain.mkdir()
    if any((parent / ".git").exists() for parent in plain.parents):
        pytest.skip("tmp_path lies inside a git checkout")
    assert resolve_state_paths(None, str(plain)).root == plain / ".ctxd"


@pytest.mark.parametrize(
    ("initialized", "start", "expected", "from_cwd"),
    [
        # Claude Code started in repo/src/deep runs repo's hooks with CLAUDE_PROJECT_DIR there.
        (["repo"], "repo/src/deep", "repo", "repo"),
        (["repo", "repo/src"], "repo/src/deep", "repo/src", "repo/src"),  # a subproject
        (["repo"], "repo", "repo", "repo"),
        # Nothing initialized: the rule as before (the project, else the git root).
        ([], "repo/src/deep", "repo/src/deep", "repo"),
        (["outside"], "outside/sub", "outside/sub", "outside/sub"),  # no repository: no walk
    ],
)
def test_resolve_takes_the_nearest_initialized_directory_up_to_the_git_root(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    initialized: list[str],
    start: str,
    expected: str,
    from_cwd: str,
) -> None:
    if any((parent / ".git").exists() for parent in tmp_path.parents):
        pytest.skip("tmp_path lies inside a git checkout")
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "src" / "deep").mkdir(parents=True)
    (tmp_path / "outside" / "sub").mkdir(parents=True)
    for folder in initialized:
        (tmp_path / folder / ".ctxd").mkdir()
    monkeypatch.delenv("CTXD_HOME", raising=False)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path / start))
    assert resolve_state_paths(None, "/").root == tmp_path / expected / ".ctxd"
    monkeypatch.delenv("CLAUDE_PROJECT_DIR")  # run from that directory instead
    assert resolve_state_paths(None, str(tmp_path / start)).root == tmp_path / from_cwd / ".ctxd"
