"""Worktree state: capture it against the base commit, and compare two captures file by file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import msgspec

from summarizer.tasks import gitops
from summarizer.tasks.canon import content_sha, diff_sha, scope_hash
from summarizer.tasks.models import FileChange, FileMeta, WorktreeSnapshot

MSG_COMMITTED = "Working tree was committed, delta tracking invalidated"
MSG_BASE_CHANGED = "Base commit changed, cannot verify deltas"
MSG_CLEAN = "Working tree is clean (changes stashed or reset), delta tracking invalidated"
MSG_TAIL = (
    "Files were modified outside the agent workflow.\n"
    "Cannot validate - working tree state is inconsistent."
)


class Capture(msgspec.Struct, frozen=True):
    """The working tree now, relative to a base commit."""

    head: str
    head_tree: str
    tree: str
    diff: bytes
    diff_sha: str
    status_report: str
    files: tuple[FileChange, ...]
    metadata: tuple[FileMeta, ...]
    diff_stat: str
    scope_hash: str
    missing_scope: tuple[str, ...]


def capture(repo: Path, base: str, repo_paths: tuple[str, ...], exclude: list[str]) -> Capture:
    """Read the working tree's state against `base` (git plumbing plus one read per file)."""
    head = gitops.head(repo)
    tree = gitops.worktree_tree(repo, exclude)
    diff = gitops.diff_trees(repo, base, tree)
    changed = gitops.name_status(repo, base, tree)
    files = tuple(
        FileChange(path=p, sha256="" if s == "D" else _file_sha(repo / p), status=s)
        for s, p in changed
    )
    present = [p for p in repo_paths if os.path.lexists(repo / p)]
    meta_paths = sorted(
        {p for s, p in changed if s != "D"} | {p for p in present if (repo / p).is_file()}
    )
    return Capture(
        head=head,
        head_tree=gitops.tree_of(repo, head),
        tree=tree,
        diff=diff,
        diff_sha=diff_sha(diff),
        status_report=gitops.status_porcelain(repo, exclude),
        files=files,
        metadata=tuple(m for p in meta_paths if (m := _meta(repo, p)) is not None),
        diff_stat=gitops.numstat(repo, base, tree),
        scope_hash=scope_hash(present),
        missing_scope=tuple(sorted(set(repo_paths) - set(present))),
    )


def with_previous(
    files: tuple[FileChange, ...], previous: WorktreeSnapshot | None
) -> tuple[FileChange, ...]:
    """files with previous_sha256 filled from the previous role's snapshot."""
    if previous is None:
        return files
    before = {f.path: f.sha256 for f in previous.files_changed}
    return tuple(msgspec.structs.replace(f, previous_sha256=before.get(f.path, "")) for f in files)


def drift_report(expected: WorktreeSnapshot, now: Capture, role: str) -> list[str]:
    """Every difference between a snapshot and the working tree now, as report lines; [] if none."""
    lines: list[str] = []
    moved = now.head != expected.base_commit
    clean = now.tree == now.head_tree
    if moved and clean:
        lines.append(MSG_COMMITTED)
    elif moved:
        lines.append(MSG_BASE_CHANGED)
    elif clean and expected.files_changed:
        lines.append(MSG_CLEAN)
    files = _file_lines(expected, now)
    if files:
        lines.append(f"Working tree drift detected after {role} finished:")
        lines += files
    if expected.scope_hash != now.scope_hash:
        gone = ", ".join(now.missing_scope) or "(a path was added back or renamed)"
        lines.append(f"Task scope changed: file renamed or deleted: {gone}")
    if expected.diff_sha != now.diff_sha and not moved:
        lines.append(
            f"Diff SHA differs: expected {expected.diff_sha[:12]}, current {now.diff_sha[:12]}"
        )
    if expected.status_report != now.status_report and not lines:
        lines.append("git status changed (staged-only edits, renames or type changes)")
    if files:
        lines += ["", *MSG_TAIL.splitlines()]
    return lines


def _file_lines(expected: WorktreeSnapshot, now: Capture) -> list[str]:
    before = {f.path: f for f in expected.files_changed}
    after = {f.path: f for f in now.files}
    meta_before = {m.path: m for m in expected.file_metadata}
    meta_after = {m.path: m for m in now.metadata}
    lines: list[str] = []
    for path in sorted(before.keys() | after.keys() | meta_before.keys()):
        old, new = before.get(path), after.get(path)
        old_sha, new_sha = _shown(old), _shown(new)
        if old_sha != new_sha:
            lines += [
                f"  {path}:",
                f"    Expected SHA: {_short(old_sha)}",
                f"    Current SHA:  {_short(new_sha)}",
            ]
            continue
        mb, ma = meta_before.get(path), meta_after.get(path)
        if mb is not None and ma is not None and (mb.mode, mb.size) != (ma.mode, ma.size):
            lines += [
                f"  {path}:",
                f"    Expected mode/size: {mb.mode} {mb.size}",
                f"    Current mode/size:  {ma.mode} {ma.size}",
            ]
    return lines


def _shown(change: FileChange | None) -> str:
    if change is None:
        return "(unchanged from base)"
    return "(deleted)" if change.status == "D" else change.sha256


def _short(sha: str) -> str:
    return sha[:12] if not sha.startswith("(") else sha


def _file_sha(path: Path) -> str:
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            return content_sha(os.readlink(path).encode("utf-8", "surrogateescape"))
        return content_sha(path.read_bytes())
    except OSError:
        return "(unreadable)"


def _meta(repo: Path, rel: str) -> FileMeta | None:
    try:
        st = os.lstat(repo / rel)
    except OSError:
        return None
    return FileMeta(path=rel, mode=f"{stat.S_IMODE(st.st_mode):o}", size=st.st_size)
