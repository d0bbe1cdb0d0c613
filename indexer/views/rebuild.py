"""Crash-safe rebuild of all views: a marker, a shadow tree, atomic swaps, redone after a kill."""

# `ctxd rebuild` used to delete the views and rewrite them inside the index transaction: a
# kill in between rolled the view watermark back while the files were already gone, and
# catch-up never refilled the gap. Now the request is committed first (a meta marker), the
# views are written into a shadow tree, each file is swapped in with one rename, stale view
# files are removed, and only then are the marker cleared and the watermark set. Every step is
# idempotent, so whatever command opens the writer next after a kill redoes the rebuild.

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from indexer import safefs
from indexer.errors import StateDirError
from indexer.index import store
from indexer.paths import StatePaths, ensure_private_dir
from indexer.views import order as view_order
from indexer.views.writer import ViewWriter, refuse_symlink

MARKER = "views_rebuild"
SHADOW = "views.new"


class _ShadowPaths(StatePaths):
    """The state paths with `sessions` pointing at the shadow tree."""

    __slots__ = ()

    @property
    def sessions(self) -> Path:
        return self.root / SHADOW


def request(conn: sqlite3.Connection) -> None:
    """Record that every view must be rebuilt (commit it before touching any view file)."""
    store.set_meta(conn, MARKER, "1")


def pending(conn: sqlite3.Connection) -> bool:
    """True if a rebuild was requested and has not finished (it may have been killed)."""
    return bool(store.get_meta(conn, MARKER, ""))


def rebuild(conn: sqlite3.Connection, paths: StatePaths) -> int:
    """Rebuild every view from the index, then clear the marker; return lines written.

    Call with the writer lock held, after `request` was committed. The marker and watermark
    updates run in the caller's transaction if there is one.
    """
    shadow = paths.root / SHADOW
    safefs.rmtree(paths.root, shadow)
    ensure_private_dir(shadow, paths.root)
    writer = ViewWriter(_ShadowPaths(paths.root))
    try:
        written = writer.append_sorted(view_order.sorted_entries(conn))
    finally:
        writer.close()
    # Every step below works on directory fds walked from the state dir (indexer.safefs): a
    # session folder swapped for a symlink meanwhile is refused, never written or deleted in.
    shadow_fd = safefs.open_dir(paths.root, shadow, create=False)
    try:
        sessions_fd = safefs.open_dir(paths.root, paths.sessions)
        try:
            fresh = _swap_in(shadow_fd, sessions_fd)
            _remove_stale(sessions_fd, fresh)
        finally:
            os.close(sessions_fd)
    finally:
        os.close(shadow_fd)
    safefs.rmtree(paths.root, shadow)
    conn.execute("DELETE FROM dirty_views")
    conn.execute("DELETE FROM unsorted_views")
    store.set_meta(conn, "views_upto", str(store.max_entry_id(conn)))
    conn.execute("DELETE FROM meta WHERE key=?", (MARKER,))
    return written


def _swap_in(shadow_fd: int, sessions_fd: int) -> set[str]:
    """Rename every shadow view over its live path; return the relative names moved."""
    moved: set[str] = set()
    with os.scandir(shadow_fd) as it:
        entries = sorted(it, key=lambda d: d.name)
    for d in entries:
        if d.is_file(follow_symlinks=False):
            os.replace(d.name, d.name, src_dir_fd=shadow_fd, dst_dir_fd=sessions_fd)
            moved.add(d.name)
        elif d.is_dir(follow_symlinks=False):
            src = _open_subdir(d.name, shadow_fd, create=False)
            try:
                try:
                    dst = _open_subdir(d.name, sessions_fd, create=True)
                except StateDirError as e:
                    refuse_symlink(Path("sessions") / d.name, e)
                    continue
                try:
                    with os.scandir(src) as files:
                        names = [f.name for f in files if f.is_file(follow_symlinks=False)]
                    for name in names:
                        os.replace(name, name, src_dir_fd=src, dst_dir_fd=dst)
                        moved.add(f"{d.name}/{name}")
                finally:
                    os.close(dst)
            finally:
                os.close(src)
    return moved


def _remove_stale(sessions_fd: int, keep: set[str]) -> None:
    """Delete view files the index no longer has (and session folders left empty)."""
    with os.scandir(sessions_fd) as it:
        entries = list(it)
    for d in entries:
        if d.is_file(follow_symlinks=False) and d.name.endswith(".jsonl") and d.name not in keep:
            os.unlink(d.name, dir_fd=sessions_fd)
        elif d.is_dir(follow_symlinks=False):
            try:
                sub = _open_subdir(d.name, sessions_fd, create=False)
            except (OSError, StateDirError):
                continue  # gone, or swapped for a symlink since the listing: not ours to clean
            try:
                with os.scandir(sub) as files:
                    names = [f.name for f in files]
                for name in names:
                    stale = name.endswith(".jsonl") and f"{d.name}/{name}" not in keep
                    if stale and not name.startswith("."):
                        os.unlink(name, dir_fd=sub)
            finally:
                os.close(sub)
            try:
                os.rmdir(d.name, dir_fd=sessions_fd)  # only if nothing else (todos.json) is there
            except OSError:
                pass


def _open_subdir(name: str, dir_fd: int, *, create: bool) -> int:
    try:
        return safefs.open_private_dir(name, dir_fd, create)
    except safefs.UnsafeStateDir as e:
        raise StateDirError(
            f"{name}: {e}; ctxd never follows a symlink in its state directory"
        ) from None
