"""indexer.safefs: every write and delete under the state dir goes through directory fds."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from indexer import safefs
from indexer.errors import StateDirError
from indexer.paths import StatePaths

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "victim.json").write_text("must stay\n")
    return out


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("link", ["", "context", "resume", "resume/s1"])
def test_a_symlink_at_any_level_is_refused(tmp_path: Path, link: str) -> None:
    out = _outside(tmp_path)
    root = tmp_path / "state"
    (root / "resume" / "s1").mkdir(parents=True, mode=0o700)
    (root / "context").mkdir(mode=0o700)
    linked = root / link if link else root
    shutil.rmtree(linked)
    linked.symlink_to(out, target_is_directory=True)
    target = root / (link or "context") / "victim.json"
    if link == "":
        target = root / "victim.json"
    before = _files(out)
    with pytest.raises(StateDirError, match="symlink"):
        safefs.write_atomic(root, target, b"written through a link")
    with pytest.raises(StateDirError, match="symlink"):
        safefs.unlink(root, target)
    with pytest.raises(StateDirError, match="symlink"):
        safefs.rmtree(root, target)
    with pytest.raises(StateDirError, match="symlink"):
        os.close(safefs.open_file(root, target, os.O_WRONLY | os.O_APPEND | os.O_CREAT))
    assert _files(out) == before


def test_a_symlinked_file_is_unlinked_itself_never_its_target(tmp_path: Path) -> None:
    out = _outside(tmp_path)
    root = tmp_path / "state"
    (root / "sessions").mkdir(parents=True, mode=0o700)
    (root / "sessions" / "evil").symlink_to(out, target_is_directory=True)
    (root / "sessions" / "x.jsonl").symlink_to(out / "victim.json")
    assert safefs.rmtree(root, root / "sessions" / "evil")
    assert safefs.unlink(root, root / "sessions" / "x.jsonl")
    assert not safefs.unlink(root, root / "sessions" / "x.jsonl")
    assert _files(out) == {"victim.json": b"must stay\n"}
    assert list((root / "sessions").iterdir()) == []


def test_a_path_outside_the_state_dir_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "state"
    with pytest.raises(StateDirError, match="not inside the state directory"):
        safefs.write_atomic(root, tmp_path / "elsewhere" / "f", b"x")
    assert not (tmp_path / "elsewhere").exists()


def test_clear_dir_and_sweep_never_leave_the_tree(tmp_path: Path) -> None:
    out = _outside(tmp_path)
    (out / ".left.123.tmp").write_text("an outside temp file\n")
    root = tmp_path / "state"
    ctx = root / "context"
    ctx.mkdir(parents=True, mode=0o700)
    (ctx / "running-summary.json").write_text("{}")
    (ctx / ".running-summary.json.9.tmp").write_text("{}")
    (ctx / "sub").mkdir()
    (ctx / "link").symlink_to(out, target_is_directory=True)
    assert safefs.sweep_temp_files(root) == 1
    assert safefs.clear_dir(root, ctx) == 3
    assert list(ctx.iterdir()) == []
    assert set(_files(out)) == {"victim.json", ".left.123.tmp"}


# -- a directory swapped for a symlink between the check and the use ------------------------


@pytest.fixture
def swap_after_walk(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[Path, Path]]]:
    """After every directory walk, swap each registered directory for a symlink: the worst
    moment for code that checks a path and then uses it by name."""
    swaps: list[tuple[Path, Path]] = []
    real_open_dir = safefs.open_dir

    def open_dir_then_swap(*args: object, **kwargs: object) -> int:
        fd = real_open_dir(*args, **kwargs)  # type: ignore[arg-type]
        for directory, target in swaps:
            if not directory.is_symlink():
                directory.rename(directory.with_name(directory.name + ".moved"))
                directory.symlink_to(target, target_is_directory=True)
        return fd

    monkeypatch.setattr(safefs, "open_dir", open_dir_then_swap)
    yield swaps


def test_writes_and_deletes_land_in_the_directory_that_was_checked(
    tmp_path: Path, swap_after_walk: list[tuple[Path, Path]]
) -> None:
    out = _outside(tmp_path)
    root = tmp_path / "state"
    ctx = root / "context"
    moved = root / "context.moved"
    ctx.mkdir(parents=True, mode=0o700)
    (ctx / "victim.json").write_text("inside\n")
    (ctx / "old.json").write_text("inside\n")
    swap_after_walk.append((ctx, out))

    def restore() -> None:  # undo the swap, so that the next operation meets it again
        assert ctx.is_symlink()
        ctx.unlink()
        moved.rename(ctx)

    safefs.write_atomic(root, ctx / "summary.json", b"{}")
    restore()
    assert safefs.unlink(root, ctx / "victim.json")
    restore()
    with pytest.raises(StateDirError, match="symlink"):  # its second walk meets the swap
        safefs.rename(root, ctx / "old.json", ctx / "victim.json")
    restore()
    fd = safefs.open_file(root, ctx / "log", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, b"line\n")
    os.close(fd)
    restore()
    assert safefs.rmtree(root, ctx / "old.json")
    restore()
    assert _files(out) == {"victim.json": b"must stay\n"}
    assert _files(ctx) == {"summary.json": b"{}", "log": b"line\n"}


_SWAPPER = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b, stop = (p.encode() for p in sys.argv[1:4])
n = 0
while not os.path.exists(stop):
    if libc.renameat2(-100, a, -100, b, 2) != 0:
        sys.exit("renameat2 failed: errno %d" % ctypes.get_errno())
    n += 1
print(n)
"""


def _renameat2_works(tmp_path: Path) -> bool:
    a, b = tmp_path / "probe-a", tmp_path / "probe-b"
    a.mkdir()
    b.symlink_to(a)
    libc = ctypes.CDLL(None, use_errno=True)
    ok = libc.renameat2(_AT_FDCWD, bytes(a), _AT_FDCWD, bytes(b), _RENAME_EXCHANGE) == 0
    for p in (a, b):
        if p.is_symlink():
            p.unlink()
        else:
            p.rmdir()
    return ok


def test_a_directory_swapped_for_a_symlink_in_a_race_loop_gets_nothing(tmp_path: Path) -> None:
    """Another process swaps context/ and a symlink to an outside folder atomically, as fast
    as it can, while the startup memory is written again and again: every write either lands
    in the real folder or is refused; nothing is ever created outside."""
    from summarizer.resume.startup import write_startup

    if not _renameat2_works(tmp_path):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not supported by this file system")
    out = tmp_path / "outside"
    out.mkdir()
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    link = paths.root / "context-link"
    link.symlink_to(out, target_is_directory=True)
    stop = tmp_path / "stop"
    swapper = subprocess.Popen(
        [sys.executable, "-c", _SWAPPER, str(paths.context), str(link), str(stop)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    written = refused = 0
    try:
        # Bounded by what was observed, not by time: both outcomes seen often enough.
        for i in range(200_000):
            try:
                write_startup(paths, f"memory {i}\n")
                written += 1
            except (StateDirError, OSError):
                refused += 1
            if written >= 30 and refused >= 30:
                break
    finally:
        stop.touch()
        stdout, stderr = swapper.communicate(timeout=60)
    assert swapper.returncode == 0, stderr
    assert int(stdout) > 0
    assert written >= 30 and refused >= 30, (written, refused)
    assert list(out.iterdir()) == []
