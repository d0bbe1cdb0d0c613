"""Handoffs: snapshot the working tree when a role finishes, verify it before the next starts."""

from __future__ import annotations

import gzip
import os
import time
from pathlib import Path
from typing import Any

from summarizer.tasks import gitops
from summarizer.tasks.canon import diff_sha, sha256_hex
from summarizer.tasks.env import TaskEnv, check_role, refuse_while_drifted, with_role
from summarizer.tasks.errors import ContextNotFoundError, DriftError, TaskValidationError
from summarizer.tasks.exports import read_manifest, write_manifest
from summarizer.tasks.models import TaskContext, WorktreeSnapshot
from summarizer.tasks.worktree import capture, drift_report, with_previous

# A test seam: with CTXD_TASK_PAUSE_AT=<point>, the command stops at that point, creates the file
# named by CTXD_TASK_PAUSE_FILE and waits to be killed (crash-safety tests kill it there).
_PAUSE_AT, _PAUSE_FILE = "CTXD_TASK_PAUSE_AT", "CTXD_TASK_PAUSE_FILE"

OVERLAP_MESSAGE = (
    "Cannot calculate incremental diff: reviewer edits overlap with implementer changes.\n\n"
    "This is a known limitation when both agents modify the same lines in a file.\n\n"
    "Mitigation: Review the cumulative diff instead (ctxd task get-diff {task} --agent {role} "
    "--type from_base)\n\n"
    "Git conflict details:\n{details}"
)


def snapshot_worktree(env: TaskEnv, task_id: str, role: str) -> WorktreeSnapshot:
    """Record the working tree at the end of `role`'s work: diff from base (gzipped, by SHA),
    status, metadata, per-file SHAs, scope hash, and the incremental diff over the previous role."""
    with env.store.lock():
        ctx = env.store.read(task_id)
        check_role(ctx, role)
        refuse_while_drifted(ctx)
        base = ctx.git.head
        now = capture(env.repo, base, ctx.immutable.repo_paths, env.exclude)
        if not now.files:
            raise TaskValidationError(
                f"the working tree has no changes since {base[:12]}: nothing to snapshot "
                "(were the changes committed or stashed?)"
            )
        if len(now.diff) > env.config.diff_warn_bytes:
            env.warn(
                f"Diff size {len(now.diff) / 1e6:.1f}MB exceeds "
                f"{env.config.diff_warn_bytes / 1e6:.0f}MB threshold. "
                "Review for unintended binary files."
            )
        text = now.diff[: env.config.diff_warn_bytes].decode("utf-8", "replace")
        env.check({"diff_from_base": text})
        # Diff files are named by content, so the previous snapshot's files stay valid until
        # the new context.json (which names the new ones) is in place.
        base_name = _write_gz(env, task_id, f"{role}-from-base", now.diff, now.diff_sha)
        previous_role, previous = _previous_snapshot(ctx, role)
        inc: dict[str, Any] = {}
        if previous is not None:
            inc = _incremental(env, ctx, role, previous_role, previous, now.tree)
        _pause_point("snapshot-worktree")
        snap = WorktreeSnapshot(
            base_commit=base,
            snapshot_time=env.clock(),
            diff_from_base=base_name,
            diff_sha=now.diff_sha,
            diff_gz_sha=sha256_hex(env.store.read_file(task_id, base_name)),
            status_report=now.status_report,
            file_metadata=now.metadata,
            files_changed=with_previous(now.files, previous),
            diff_stat=now.diff_stat,
            scope_hash=now.scope_hash,
            diff_bytes=len(now.diff),
            previous_role=previous_role,
            **inc,
        )
        new = env.commit(with_role(ctx, role, worktree_snapshot=snap), ctx, "snapshot-worktree")
        _prune_diffs(env, new)
        _refresh_manifest(env, new)
        return snap


def verify_worktree(env: TaskEnv, task_id: str, expected_role: str) -> WorktreeSnapshot:
    """Check the working tree against `expected_role`'s snapshot; on drift, count it in that
    role's drift_budget and raise DriftError with the file-by-file report."""
    with env.store.lock():
        ctx = env.store.read(task_id)
        check_role(ctx, expected_role)
        snap = ctx.coordination[expected_role].worktree_snapshot
        if snap is None:
            raise ContextNotFoundError(
                f"No snapshot found for {expected_role}: run `ctxd task snapshot-worktree "
                f"{task_id} --agent {expected_role}` when it finishes"
            )
        now = capture(env.repo, snap.base_commit, ctx.immutable.repo_paths, env.exclude)
        report = drift_report(snap, now, expected_role)
        if not report:
            return snap
        budget = ctx.coordination[expected_role].drift_budget + 1
        env.commit(with_role(ctx, expected_role, drift_budget=budget), ctx, "verify-worktree")
    raise DriftError("\n".join(report), report)


def verify_previous(env: TaskEnv, task_id: str, role: str) -> None:
    """Before a role starts: verify the previous role's snapshot (nothing for the first role)."""
    ctx = env.store.read(task_id)
    check_role(ctx, role)
    index = ctx.roles.index(role)
    if index > 0:
        verify_worktree(env, task_id, ctx.roles[index - 1])


def get_diff(env: TaskEnv, task_id: str, role: str, kind: str) -> dict[str, Any]:
    """Where a role's diff is: from_base (cumulative) or incremental (over the previous role)."""
    ctx = env.store.read(task_id)
    check_role(ctx, role)
    snap = ctx.coordination[role].worktree_snapshot
    if snap is None:
        raise ContextNotFoundError(f"No snapshot found for {role}")
    name: str | None
    sha: str | None
    error: str | None
    if kind == "from_base":
        name, sha, error = snap.diff_from_base, snap.diff_sha, None
    else:
        name, sha, error = (
            snap.diff_from_implementer,
            snap.incremental_diff_sha,
            snap.incremental_diff_error,
        )
    if name is None:
        raise ContextNotFoundError(
            error
            or f"{role} has no incremental diff (it is the first role, or had no previous snapshot)"
        )
    path = env.store.task_dir(task_id) / name
    return {"path": str(path), "sha256": sha, "type": kind, "role": role}


def read_diff(env: TaskEnv, task_id: str, name: str) -> bytes:
    return gzip.decompress(env.store.read_file(task_id, name))


def _previous_snapshot(ctx: TaskContext, role: str) -> tuple[str, WorktreeSnapshot | None]:
    index = ctx.roles.index(role)
    if index == 0:
        return "", None
    prev = ctx.roles[index - 1]
    return prev, ctx.coordination[prev].worktree_snapshot


def _incremental(
    env: TaskEnv, ctx: TaskContext, role: str, prev_role: str, prev: WorktreeSnapshot, tree: str
) -> dict[str, Any]:
    """The role's own changes: reverse-apply the previous role's diff to the current tree in a
    scratch index (base + this role's edits), then diff the base against it."""
    patch = read_diff(env, ctx.task_id, prev.diff_from_base)
    result, details = gitops.reverse_apply(env.repo, tree, patch)
    if result is None:
        message = OVERLAP_MESSAGE.format(task=ctx.task_id, role=role, details=details)
        return {
            "diff_from_implementer": None,
            "incremental_diff_sha": None,
            "incremental_diff_error": message,
        }
    diff = gitops.diff_trees(env.repo, prev.base_commit, result)
    sha = diff_sha(diff)
    name = _write_gz(env, ctx.task_id, f"{role}-from-{prev_role}", diff, sha)
    return {
        "diff_from_implementer": name,
        "incremental_diff_sha": sha,
        "incremental_diff_error": None,
    }


def _write_gz(env: TaskEnv, task_id: str, stem: str, diff: bytes, sha: str) -> str:
    name = f"{stem}.{sha[:16]}.diff.gz"
    env.store.write_file(task_id, name, gzip.compress(diff, compresslevel=6, mtime=0))
    return name


def _prune_diffs(env: TaskEnv, ctx: TaskContext) -> None:
    """Remove diff files no snapshot names any more (after the context that names the new ones)."""
    keep = set()
    for c in ctx.coordination.values():
        if c.worktree_snapshot is not None:
            keep.add(c.worktree_snapshot.diff_from_base)
            if c.worktree_snapshot.diff_from_implementer:
                keep.add(c.worktree_snapshot.diff_from_implementer)
    for path in env.store.task_dir(ctx.task_id).glob("*.diff.gz"):
        if path.name not in keep:
            path.unlink(missing_ok=True)


def _refresh_manifest(env: TaskEnv, ctx: TaskContext) -> None:
    try:
        manifest = read_manifest(env.store, ctx.task_id)
    except (OSError, ValueError):
        return
    sources = [Path(env.repo / s.path) for s in manifest.sources]
    write_manifest(env.store, ctx, env.repo, sources, manifest.task_file)


def _pause_point(name: str) -> None:
    if os.environ.get(_PAUSE_AT) != name:
        return
    Path(os.environ[_PAUSE_FILE]).write_text(str(os.getpid()))
    while True:  # killed here by the test
        time.sleep(1)
