"""Crash-safe rebuild of all views: a marker, a shadow tree, atomic swaps, redone after a kill."""

# `ctxd rebuild` used to delete the views and rewrite them inside the index transaction: a
# kill in between rolled the view watermark back while the files were already gone, and
# catch-up never refilled the gap. Now the request is committed first (a meta marker), the
# views are written into a shadow tree, each file is swapped in with one rename, stale view
# files are removed, and only then are the marker cleared and the watermark set. Every step is
# idempotent, so whatever command opens the writer next after a kill redoes the rebuild.

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from indexer import store
from indexer.paths import StatePaths, ensure_private_dir
from indexer.view_writer import ViewWriter, append_after

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
    _remove_tree(shadow)
    ensure_private_dir(shadow)
    writer = ViewWriter(_ShadowPaths(paths.root))
    try:
        written, _ = append_after(conn, writer, 0)
    finally:
        writer.close()
    fresh = _swap_in(shadow, paths.sessions)
    _remove_stale(paths.sessions, fresh)
    _remove_tree(shadow)
    conn.execute("DELETE FROM dirty_views")
    store.set_meta(conn, "views_upto", str(store.max_entry_id(conn)))
    conn.execute("DELETE FROM meta WHERE key=?", (MARKER,))
    return written


def _swap_in(shadow: Path, sessions: Path) -> set[str]:
    """Rename every shadow view over its live path; return the relative names moved."""
    ensure_private_dir(sessions)
    moved: set[str] = set()
    with os.scandir(shadow) as it:
        entries = sorted(it, key=lambda d: d.name)
    for d in entries:
        if d.is_file(follow_symlinks=False):
            os.replace(d.path, sessions / d.name)
            moved.add(d.name)
        elif d.is_dir(follow_symlinks=False):
            ensure_private_dir(sessions / d.name)
            with os.scandir(d.path) as files:
                for f in files:
                    if f.is_file(follow_symlinks=False):
                        os.replace(f.path, sessions / d.name / f.name)
                        moved.add(f"{d.name}/{f.name}")
    return moved


def _remove_stale(sessions: Path, keep: set[str]) -> None:
    """Delete view files the index no longer has (and session folders left empty)."""
    with os.scandir(sessions) as it:
        entries = list(it)
    for d in entries:
        if d.is_file(follow_symlinks=False) and d.name.endswith(".jsonl") and d.name not in keep:
            os.unlink(d.path)
        elif d.is_dir(follow_symlinks=False):
            with os.scandir(d.path) as files:
                for f in list(files):
                    rel = f"{d.name}/{f.name}"
                    if f.name.endswith(".jsonl") and not f.name.startswith(".") and rel not in keep:
                        os.unlink(f.path)
            try:
                os.rmdir(d.path)  # only succeeds if nothing else (todos.json) lives there
            except OSError:
                pass


def _remove_tree(path: Path) -> None:
    if path.is_symlink():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)
