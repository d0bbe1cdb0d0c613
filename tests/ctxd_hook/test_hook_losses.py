"""Every event the hook cannot spool is counted, with why, and `ctxd status` and `ctxd doctor`
say so with the fix: a full disk, a read-only state dir, one the hook's user cannot open or
must not use (another user's). Read commands still answer on a state dir they cannot write.
Real mounts (as root; skipped with the reason otherwise), the real hook, the real CLI."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, hook_env, payload, run_cli, run_hook, spool_lines

NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"


def _mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here ({' '.join(args)}): {done.stderr.strip()}")


@contextlib.contextmanager
def mounted(mountpoint: Path, *args: str) -> Iterator[Path]:
    """`mount *args mountpoint` (root only), unmounted at the end; skip where not possible."""
    if os.geteuid() != 0:
        pytest.skip("mounting needs root")
    mountpoint.mkdir(parents=True, exist_ok=True)
    _mount(*args, str(mountpoint))
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=False)


def fill_disk(path: Path) -> None:
    """Write `path` until the file system reports ENOSPC (down to single bytes)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 16, 4096, 1):
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError:
                    break
    finally:
        os.close(fd)


def prompt(n: int, size: int = 100) -> bytes:
    text = f"lost-or-kept-{n:04d} " + "y" * size
    return payload(session_id="s-losses", hook_event_name="UserPromptSubmit", prompt=text)


def spooled(state: Path, marks: range) -> int:
    """How many of the prompts numbered `marks` are whole lines in the spool."""
    lines = spool_lines(state)
    return sum(
        1
        for n in marks
        if any(f"lost-or-kept-{n:04d} ".encode() in x and x.endswith(b"}}") for x in lines)
    )


def status(state: Path, env: dict[str, str]) -> dict[str, Any]:
    done = run_cli("status", "--json", state_dir=state, env=env)
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def doctor(state: Path, env: dict[str, str]) -> dict[str, dict[str, str]]:
    done = run_cli("doctor", "--json", state_dir=state, env=env)
    return {c["name"]: c for c in json.loads(done.stdout)}


def test_events_lost_to_a_full_disk_are_counted(tmp_path: Path) -> None:
    with mounted(tmp_path / "mnt", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs") as mnt:
        state = mnt / "state"
        # The user's own state folder is on the full disk too: the state dir's counter,
        # which keeps room for itself, must do.
        env = hook_env(state, XDG_STATE_HOME=str(mnt / "xdg"))
        assert run_hook(prompt(0), env).returncode == 0
        done = run_cli("ingest", state_dir=state, env=env)
        assert done.returncode == 0, done.stderr
        fill_disk(mnt / "filler")
        tried = range(1, 41)
        for n in tried:
            done = run_hook(prompt(n, 2000), env)
            assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
        lost = len(tried) - spooled(state, tried)
        assert lost > 30  # a line may still fit in the segment's last page

        report = status(state, env)
        assert report["hook_failures"] == lost
        assert report["hook_failure_reasons"] == {"disk full": lost}
        assert report["read_only"] == "disk full"
        text = run_cli("status", state_dir=state, env=env)
        assert text.returncode == 0, text.stderr
        assert f"hook errors: {lost} events could not be spooled (disk full: {lost})" in text.stdout
        check = doctor(state, env)["hook writes"]
        assert check["status"] == "WARN" and f"{lost} hook events" in check["detail"]
        assert "free space" in check["fix"] and f"rm {state / 'hook-failures'}" in check["fix"]
        # A read still answers, from what was indexed before, and says what it cannot show.
        read = run_cli("read", "--agent-id", "main", state_dir=state, env=env)
        assert read.returncode == 0, read.stderr
        assert "lost-or-kept-0000" in read.stdout
        assert "cannot be written (disk full)" in read.stderr


def test_a_read_only_state_dir_counts_its_losses_and_still_answers(tmp_path: Path) -> None:
    real, view = tmp_path / "real", tmp_path / "view"
    env = hook_env(real / ".ctxd", XDG_STATE_HOME=str(tmp_path / "xdg"))
    for n in range(3):
        assert run_hook(prompt(n), env).returncode == 0
    assert run_cli("ingest", state_dir=real / ".ctxd", env=env).returncode == 0
    assert run_hook(prompt(3), env).returncode == 0  # spooled, not yet indexed
    with mounted(view, "--bind", str(real)):
        _mount("-o", "remount,bind,ro", str(view))
        state = view / ".ctxd"
        env = hook_env(state, XDG_STATE_HOME=str(tmp_path / "xdg"))
        for n in range(10, 30):
            done = run_hook(prompt(n), env)
            assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
        assert spooled(state, range(10, 30)) == 0

        report = status(state, env)
        assert report["hook_failures"] == 20
        assert report["hook_failure_reasons"] == {"read-only file system": 20}
        assert report["entries"] == 3 and report["lag"]["lines"] == 1
        text = run_cli("status", state_dir=state, env=env).stdout
        assert "(cannot be written: read-only file system)" in text
        checks = doctor(state, env)
        assert checks["state dir"]["status"] == "FAIL"
        assert "read-only file system" in checks["state dir"]["detail"]
        assert "remount" in checks["hook writes"]["fix"]

        read = run_cli("read", "--agent-id", "main", state_dir=state, env=env)
        assert read.returncode == 0, read.stderr
        assert [e["description"][:17] for e in json.loads(read.stdout)["entries"]] == [
            f"lost-or-kept-{n:04d}" for n in range(3)
        ]
        assert read.stderr.count("\n") == 1 and "not indexed and not shown" in read.stderr
        search = run_cli("search", "lost", "--json", state_dir=state, env=env)
        assert search.returncode == 0, search.stderr
        assert len(json.loads(search.stdout)) == 3
        sessions = run_cli("sessions", "--json", state_dir=state, env=env)
        assert sessions.returncode == 0, sessions.stderr
        assert [s["session_id"] for s in json.loads(sessions.stdout)] == ["s-losses"]
        ingest = run_cli("ingest", state_dir=state, env=env)
        assert ingest.returncode == 1 and "cannot be written" in ingest.stderr
        assert os.listdir(state / "spool") == os.listdir(real / ".ctxd" / "spool")


def test_events_refused_in_another_users_state_dir_are_counted(tmp_path: Path) -> None:
    """Run as root, the hook refuses a state dir that belongs to another user."""
    if os.geteuid() != 0:
        pytest.skip("chown to another user needs root")
    state = tmp_path / "state"
    env = hook_env(state, XDG_STATE_HOME=str(tmp_path / "xdg"))
    assert run_hook(prompt(0), env).returncode == 0
    assert run_cli("ingest", state_dir=state, env=env).returncode == 0
    for path in [state, *state.rglob("*")]:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
    for n in range(1, 11):
        done = run_hook(prompt(n), env)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert spooled(state, range(1, 11)) == 0
    done = run_cli("status", state_dir=state, env=env)
    assert done.returncode == 1 and done.stdout == "" and done.stderr.count("\n") == 1
    assert f"{state} belongs to nobody, not to you: ctxd's hooks do not record" in done.stderr
    assert "(10 events lost so far)" in done.stderr and "sudo chown -R root" in done.stderr
    checks = doctor(state, env)
    assert checks["state dir"]["status"] == "FAIL"
    reason = "state dir not private (another user's, writable by others, or a symlink)"
    assert checks["hook writes"]["detail"].endswith(f"spool ({reason}: 10)")
    assert "chown" in checks["hook writes"]["fix"]


def _as_nobody(argv: list[str], env: dict[str, str], data: bytes = b"") -> Any:
    return subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv],
        input=data,
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None or not os.path.exists(SYSTEM_PYTHON),
    reason="needs root, setpriv(1) and a system python3 another user may run",
)
def test_a_user_whose_hook_cannot_open_the_state_dir_is_told_by_status() -> None:
    """The hook runs as a user who may not enter the state dir (root's, 0700): its events are
    counted in that user's own state folder, and that user's `ctxd status` says whose the
    state dir is and how many events were lost (status runs on the standard library)."""
    top = Path(tempfile.mkdtemp(prefix="ctxd-foreign-", dir="/tmp"))
    try:
        top.chmod(0o755)
        state = top / "proj" / ".ctxd"
        state.parent.mkdir(mode=0o755)
        env = hook_env(state)
        assert run_hook(prompt(0), env).returncode == 0
        xdg = top / "xdg-nobody"
        xdg.mkdir()
        os.chown(xdg, NOBODY, NOBODY)
        theirs = {"CTXD_HOME": str(state), "XDG_STATE_HOME": str(xdg), "PATH": "/usr/bin:/bin"}
        hook = [SYSTEM_PYTHON, "-I", "-S", str(REPO / "plugin" / "ctxd_hook" / "run_hook.py")]
        for n in range(1, 6):
            done = _as_nobody(hook, theirs, prompt(n))
            assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
        assert spooled(state, range(1, 6)) == 0
        cli = [SYSTEM_PYTHON, "-m", "summarizer.cli.app", "status"]
        done = _as_nobody(cli, {**theirs, "PYTHONPATH": str(REPO)})
        assert done.returncode == 1 and done.stdout == b""
        err = done.stderr.decode()
        assert err.count("\n") == 1
        assert f"{state} belongs to root, not to you" in err
        assert "(5 events lost so far)" in err and "sudo chown -R" in err
    finally:
        shutil.rmtree(top)


def test_the_users_counter_is_named_after_the_state_dir_and_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxd_hook.losses import NOT_PRIVATE, count_loss, user_counter_path
    from indexer.lost_events import losses

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    folder = tmp_path / "xdg" / "ctxd" / "lost-events"
    base = tmp_path / "my project" / ".ctxd"
    name = str(base).replace("%", "%25").replace("/", "%2F").replace(" ", "%20")
    assert user_counter_path(str(base)) == str(folder / name)
    # Two long paths that differ only past the cut get two counters.
    one, two = (tmp_path / ("x" * 240) / s / ".ctxd" for s in ("one", "two"))
    for _ in range(3):
        count_loss(str(one), NOT_PRIVATE)
    count_loss(str(two), NOT_PRIVATE)
    assert len(os.listdir(folder)) == 2
    assert all(len(n) <= 200 for n in os.listdir(folder))
    reason = "state dir not private (another user's, writable by others, or a symlink)"
    assert (losses(str(one)), losses(str(two))) == ({reason: 3}, {reason: 1})
    # A counter whose header names another state dir is not counted for this one.
    os.replace(user_counter_path(str(one)), user_counter_path(str(base)))
    assert losses(str(base)) == {}
