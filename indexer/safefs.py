"""Writes and deletes under the state directory through directory fds: no symlink is followed."""

# Checking a path for a symlink and then using it by name leaves a window in which a directory
# can be swapped for a link. Here every operation opens the state directory itself with
# O_NOFOLLOW, walks each directory below it with openat(O_NOFOLLOW|O_DIRECTORY) (the hook's own
# `open_private_dir`, so one rule serves the hook, the daemon and every command), and then
# creates, renames or unlinks the last name relative to that directory's fd. A name that is a
# symlink at any step is refused, whenever the swap happened. The state directory's parents
# belong to the user (a project path may legitimately contain a symlink) and are followed.

from __future__ import annotations

import contextlib
import os
import stat

from indexer.errors import StateDirError

TYPE_CHECKING = False  # not `typing`: the SessionStart fast path imports this module
if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "UnsafeStateDir",
    "clear_dir",
    "open_dir",
    "open_file",
    "open_private_dir",
    "parent_fd",
    "read_bytes",
    "refuse_linked_index",
    "rename",
    "rmtree",
    "unlink",
    "unplain_kind",
    "write_atomic",
]

# The hook keeps an identical copy of the directory walk below (run as a script, it may import
# nothing but the standard library); tests/indexer/test_safefs.py checks that the two match.
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeStateDir(OSError):
    """The state directory (or its spool) is a symlink, another user's, or writable by others."""


def open_private_dir(name: str, dir_fd: "int | None" = None, create: bool = True) -> int:  # noqa: UP037
    """Open directory `name` (relative to dir_fd if given) without following a symlink,
    creating it 0700 if missing; refuse one owned by another user or writable by others."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise
        try:
            os.mkdir(name, 0o700, dir_fd=dir_fd)
        except FileExistsError:
            pass  # a concurrent hook made it
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except NotADirectoryError:
        raise UnsafeStateDir(f"{name} is a symlink or not a directory") from None
    except OSError as e:
        if e.errno == 40:  # ELOOP: O_NOFOLLOW met a symlink
            raise UnsafeStateDir(f"{name} is a symlink") from None
        raise
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        os.close(fd)
        raise UnsafeStateDir(f"{name} is owned by another user or writable by others")
    return fd


FILE_MODE = 0o600
TEMP_SUFFIX = ".tmp"
StrPath = str | os.PathLike[str]


def open_dir(root: StrPath, path: StrPath | None = None, *, create: bool = True) -> int:
    """An fd of directory `path` (the state dir `root` itself if None), opened component by
    component from `root` without following a symlink, created 0700 where missing if `create`.

    Raises StateDirError for a symlink (or a directory another user owns or others may write),
    FileNotFoundError for a missing directory when not `create`.
    """
    root = os.path.abspath(root)
    parts = _parts(root, path)
    try:
        if create:
            os.makedirs(os.path.dirname(root), mode=0o700, exist_ok=True)
        fd = open_private_dir(root, None, create)
        for part in parts:
            try:
                child = open_private_dir(part, fd, create)
            finally:
                os.close(fd)
            fd = child
    except UnsafeStateDir as e:
        raise StateDirError(
            f"{e} (under {root}): ctxd never uses a symlink, another user's directory or one "
            "writable by others in its state directory; remove or fix it (see ctxd doctor)"
        ) from None
    return fd


@contextlib.contextmanager
def parent_fd(root: StrPath, path: StrPath, *, create: bool = True) -> Iterator[tuple[int, str]]:
    """(fd of the directory holding `path`, the last name of `path`), the fd closed on exit."""
    parent, name = os.path.split(os.path.abspath(path))
    fd = open_dir(root, parent, create=create)
    try:
        yield fd, name
    finally:
        os.close(fd)


def open_file(root: StrPath, path: StrPath, flags: int, mode: int = FILE_MODE) -> int:
    """os.open of `path` under `root`: parents walked by fd, the file itself O_NOFOLLOW."""
    with parent_fd(root, path, create=bool(flags & os.O_CREAT)) as (dfd, name):
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dfd)


# SQLite opens the database, its WAL and its shared-memory file by name: a link planted at any
# of them would have the index read, and its -wal and -shm created and written, elsewhere.
_INDEX_SUFFIXES = ("", "-wal", "-shm", "-journal")


def unplain_kind(path: StrPath) -> str:
    """What `path` is if it exists and is no plain file ("a symlink", "not a regular file"),
    by lstat (a link is never followed); "" if it is a plain file or does not exist."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return ""
    if stat.S_ISREG(mode):
        return ""
    return "a symlink" if stat.S_ISLNK(mode) else "not a regular file"


def refuse_linked_index(index_db: StrPath) -> None:
    """Raise StateDirError if the index or one of SQLite's files beside it is a symlink or not
    a regular file; called right before every connection to it."""
    for suffix in _INDEX_SUFFIXES:
        name = f"{os.fspath(index_db)}{suffix}"
        kind = unplain_kind(name)
        if kind:
            raise StateDirError(
                f"{name} is {kind}: ctxd never follows a link in its state directory; "
                "put the real file in its place (or remove it) and run the command again"
            )


def read_bytes(root: StrPath, path: StrPath) -> bytes:
    """The bytes of a regular file under `root`, refusing a symlink anywhere below `root`."""
    fd = open_file(root, path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def write_atomic(root: StrPath, path: StrPath, data: bytes) -> None:
    """Write `path` by temp + fsync + rename + directory fsync (I11), all relative to the fd of
    its directory, so the file lands in the directory that was checked."""
    with parent_fd(root, path) as (dfd, name):
        tmp = f".{name}.{os.getpid()}{TEMP_SUFFIX}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(tmp, flags, FILE_MODE, dir_fd=dfd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        os.fsync(dfd)


def unlink(root: StrPath, path: StrPath) -> bool:
    """Remove the file (or the symlink itself) at `path`; False if there was none."""
    try:
        with parent_fd(root, path, create=False) as (dfd, name):
            os.unlink(name, dir_fd=dfd)
    except FileNotFoundError:
        return False
    return True


def rename(root: StrPath, src: StrPath, dst: StrPath) -> None:
    """os.replace `src` over `dst`, both under `root`, each relative to its directory's fd."""
    with parent_fd(root, src, create=False) as (sfd, sname), parent_fd(root, dst) as (dfd, dname):
        os.replace(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd)


def rmtree(root: StrPath, path: StrPath) -> bool:
    """Delete the tree at `path` (a symlink there is unlinked, never followed); False if none.

    shutil.rmtree with a dir_fd walks by descriptors and never follows a link inside the tree.
    """
    try:
        with parent_fd(root, path, create=False) as (dfd, name):
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except FileNotFoundError:
                return False
            if stat.S_ISDIR(st.st_mode):
                import shutil  # lazily: it loads bz2 and lzma, the hook path never deletes

                shutil.rmtree(name, dir_fd=dfd)
            else:
                os.unlink(name, dir_fd=dfd)
    except FileNotFoundError:
        return False
    return True


def clear_dir(root: StrPath, path: StrPath) -> int:
    """Delete everything inside the directory `path` (kept itself); return how many entries.

    A symlinked `path` is refused (StateDirError); links inside it are removed, not followed.
    """
    try:
        dfd = open_dir(root, path, create=False)
    except FileNotFoundError:
        return 0
    removed = 0
    try:
        with os.scandir(dfd) as it:
            entries = [(d.name, d.is_dir(follow_symlinks=False)) for d in it]
        for name, is_dir in entries:
            try:
                if is_dir:
                    import shutil

                    shutil.rmtree(name, dir_fd=dfd)
                else:
                    os.unlink(name, dir_fd=dfd)
                removed += 1
            except FileNotFoundError:
                pass
    finally:
        os.close(dfd)
    return removed


def sweep_temp_files(root: StrPath) -> int:
    """Remove temp files left by a crash mid-write anywhere under `root`; return how many.

    The walk is os.fwalk's: by descriptors, never into a symlinked directory.
    """
    try:
        top = open_dir(root, create=False)
    except (FileNotFoundError, StateDirError):
        return 0
    removed = 0
    try:
        for _, _, files, dfd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
            for name in files:
                if name.startswith(".") and name.endswith(TEMP_SUFFIX):
                    try:
                        os.unlink(name, dir_fd=dfd)
                        removed += 1
                    except OSError:
                        pass
    finally:
        os.close(top)
    return removed


def _parts(root: str, path: StrPath | None) -> list[str]:
    """The components of `path` below `root`; a path outside the state dir is an error."""
    if path is None:
        return []
    rel = os.path.relpath(os.path.abspath(path), root)
    if rel == ".":
        return []
    parts = rel.split(os.sep)
    if ".." in parts or os.path.isabs(rel):
        raise StateDirError(f"{path} is not inside the state directory {root}")
    return parts
