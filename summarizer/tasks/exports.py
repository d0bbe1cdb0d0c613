"""Derived files: role-scoped exports (context-<role>.json) and the provenance manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from summarizer.tasks.canon import NORMALIZER, SERIALIZER, canonical_json, sha256_hex
from summarizer.tasks.models import SCHEMA_VERSION, Manifest, ManifestEntry, TaskContext
from summarizer.tasks.store import CONTEXT, MANIFEST, TaskStore

# What each default role leaves out of the immutable block (a role not listed gets all of it):
# the reviewer judges the change against the task and the standards, not the QA baseline; the
# validator runs the QA commands against the acceptance criteria and needs no scope prose.
_OMIT: dict[str, frozenset[str]] = {
    "reviewer": frozenset({"validation_baseline"}),
    "validator": frozenset({"scope_out"}),
}


def export_name(role: str) -> str:
    return f"context-{role}.json"


def role_export(ctx: TaskContext, role: str) -> dict[str, Any]:
    """The slice of the immutable block one role reads (what a subagent of that role is given)."""
    immutable = msgspec.to_builtins(ctx.immutable)
    omit = _OMIT.get(role, frozenset())
    snapshot = {k: v for k, v in immutable.pop("task_snapshot").items() if k not in omit}
    body = {k: v for k, v in immutable.items() if k not in omit}
    index = ctx.roles.index(role) if role in ctx.roles else -1
    return {
        "version": SCHEMA_VERSION,
        "task_id": ctx.task_id,
        "role": role,
        "previous_role": ctx.roles[index - 1] if index > 0 else None,
        "git_head": ctx.git.head,
        "task_snapshot": snapshot,
        **body,
    }


def previous_summary(ctx: TaskContext, role: str) -> dict[str, Any] | None:
    """What the role before `role` left: status, findings, and its worktree snapshot in short
    (for a subagent's handoff); None for the first role or an unknown one."""
    index = ctx.roles.index(role) if role in ctx.roles else 0
    if index == 0:
        return None
    previous = ctx.roles[index - 1]
    coordination = ctx.coordination.get(previous)
    if coordination is None:
        return None
    snap = coordination.worktree_snapshot
    return {
        "role": previous,
        "status": coordination.status,
        "completed_at": coordination.completed_at,
        "blocking_findings": list(coordination.blocking_findings),
        "drift_budget": coordination.drift_budget,
        "snapshot": None
        if snap is None
        else {
            "snapshot_time": snap.snapshot_time,
            "base_commit": snap.base_commit,
            "diff_stat": snap.diff_stat,
            "diff_sha": snap.diff_sha,
            "files": [f"{f.status} {f.path}" for f in snap.files_changed],
        },
    }


def write_exports(store: TaskStore, ctx: TaskContext) -> list[Path]:
    """Write every role's export; return their paths."""
    return [
        store.write_file(ctx.task_id, export_name(role), canonical_json(role_export(ctx, role)))
        for role in ctx.roles
    ]


def write_manifest(
    store: TaskStore, ctx: TaskContext, repo: Path, sources: list[Path], task_file: str
) -> Manifest:
    """List every source file and every derived file with its SHA-256, plus the serializer and
    normalizer versions, so a rebuild can be automated and audited."""
    directory = store.task_dir(ctx.task_id)
    derived_names = [CONTEXT, *(export_name(r) for r in ctx.roles)]
    derived_names += sorted(p.name for p in directory.glob("*.diff.gz"))
    manifest = Manifest(
        version=SCHEMA_VERSION,
        task_id=ctx.task_id,
        serializer=SERIALIZER,
        normalizer=NORMALIZER,
        sources=tuple(
            ManifestEntry(path=_rel(p, repo), sha256=sha256_hex(p.read_bytes()), kind="source")
            for p in sorted(set(sources))
            if p.is_file()
        ),
        derived=tuple(
            ManifestEntry(
                path=n, sha256=sha256_hex(store.read_file(ctx.task_id, n)), kind="derived"
            )
            for n in derived_names
            if (directory / n).is_file()
        ),
        task_file=task_file,
        repo_root=str(repo),
    )
    store.write_file(ctx.task_id, MANIFEST, canonical_json(msgspec.to_builtins(manifest)))
    return manifest


def read_manifest(store: TaskStore, task_id: str) -> Manifest:
    return msgspec.json.decode(store.read_file(task_id, MANIFEST), type=Manifest)


def _rel(path: Path, repo: Path) -> str:
    try:
        return path.resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:
        return str(path)
