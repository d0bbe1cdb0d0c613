"""`ctxd view -o FILE`: the page is as private as the state dir, whatever the umask, and is
never written through a link (a planted temporary name, or the target itself)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import REPO, hook_env, payload, run_cli, run_hook

SID = "private-0001"
SECRET_TEXT = "the sessions own words 7741"


def _session(state_dir: Path) -> None:
    event = payload(session_id=SID, hook_event_name="UserPromptSubmit", prompt=SECRET_TEXT)
    assert run_hook(event, hook_env(state_dir)).returncode == 0


@contextmanager
def _umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def test_the_page_is_0600_even_at_umask_000(state_dir: Path, tmp_path: Path) -> None:
    _session(state_dir)
    page = tmp_path / "new-folder" / "page.html"
    with _umask(0):
        out = run_cli("view", SID, "-o", str(page), state_dir=state_dir)
    assert out.returncode == 0, out.stderr
    assert SECRET_TEXT in page.read_text()
    assert stat.S_IMODE(page.stat().st_mode) == 0o600
    assert stat.S_IMODE(page.parent.stat().st_mode) == 0o700  # the folder ctxd made
    assert sorted(os.listdir(page.parent)) == ["page.html"]  # no temporary file left


def test_an_existing_readable_page_is_replaced_by_a_private_one(
    state_dir: Path, tmp_path: Path
) -> None:
    _session(state_dir)
    page = tmp_path / "page.html"
    page.write_text("an older page")
    page.chmod(0o644)
    out = run_cli("view", SID, "-o", str(page), state_dir=state_dir)
    assert out.returncode == 0, out.stderr
    assert SECRET_TEXT in page.read_text()
    assert stat.S_IMODE(page.stat().st_mode) == 0o600


def test_a_symlink_named_with_o_is_refused_and_its_target_untouched(
    state_dir: Path, tmp_path: Path
) -> None:
    _session(state_dir)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    page = tmp_path / "page.html"
    page.symlink_to(victim)
    out = run_cli("view", SID, "-o", str(page), state_dir=state_dir)
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1
    assert "is a symlink" in out.stderr and "-o" in out.stderr
    assert page.is_symlink() and victim.read_text() == "keep me"
    assert sorted(os.listdir(tmp_path)) == ["page.html", "state", "victim.txt"]


def test_a_directory_named_with_o_is_one_line(state_dir: Path, tmp_path: Path) -> None:
    _session(state_dir)
    out = run_cli("view", SID, "-o", str(tmp_path), state_dir=state_dir)
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1 and "not a regular file" in out.stderr


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="needs root and unshare(1) to run ctxd in a PID namespace (a known pid)",
)
def test_a_link_planted_at_a_guessable_temporary_name_is_not_written_through(
    state_dir: Path, tmp_path: Path
) -> None:
    """Run as pid 1 of a new PID namespace, a temporary name built from the pid is known in
    advance: a link planted there must not receive the page."""
    _session(state_dir)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    victim.chmod(0o644)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    for pid in range(1, 4):  # pid 1 in the namespace; a few more in case unshare forks twice
        (out_dir / f".page.html.{pid}.tmp").symlink_to(victim)
    env = hook_env(state_dir, PYTHONPATH=str(REPO))
    argv = ["unshare", "--pid", "--fork", sys.executable, "-m", "summarizer.cli.app"]
    done = subprocess.run(
        [*argv, "view", SID, "-o", str(out_dir / "page.html")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == "keep me"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert SECRET_TEXT in (out_dir / "page.html").read_text()
