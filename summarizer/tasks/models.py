"""The task context schema: frozen msgspec Structs for context.json, version 1.

Schema evolution (msgspec's rules): a new field gets a default, a field never changes type; a
change that cannot follow them bumps SCHEMA_VERSION and `decode_context` learns the old one.
"""

from __future__ import annotations

import msgspec

SCHEMA_VERSION = 1
STATUSES = ("pending", "in_progress", "done", "blocked")
DEFAULT_ROLES = ("implementer", "reviewer", "validator")


class TaskSnapshot(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    title: str
    priority: str = ""
    area: str = ""
    description: str = ""
    scope_in: tuple[str, ...] = ()
    scope_out: tuple[str, ...] = ()
    acceptance_criteria: tuple[str, ...] = ()


class Citation(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    file: str
    section: str
    requirement: str
    line_span: str = ""
    content_sha: str = ""


class QaResult(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    role: str
    log_path: str
    log_sha: str
    recorded_at: str
    summary: str = ""


class ValidationBaseline(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    commands: tuple[str, ...] = ()
    status: str = "pending"  # "pending" until `record-qa` stores a result
    initial_results: tuple[QaResult, ...] = ()


class Immutable(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    task_snapshot: TaskSnapshot
    standards_citations: tuple[Citation, ...] = ()
    validation_baseline: ValidationBaseline = ValidationBaseline()
    repo_paths: tuple[str, ...] = ()


class GitInfo(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    head: str
    task_file_sha: str = ""


class FileMeta(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    path: str
    mode: str
    size: int


class FileChange(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    path: str
    sha256: str  # of the working-tree content, CRLF folded to LF; "" when deleted
    status: str  # git's letter: A, M, D, T, or ? for untracked
    previous_sha256: str = ""  # the same file in the previous role's snapshot


class WorktreeSnapshot(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    base_commit: str
    snapshot_time: str
    diff_from_base: str  # file name in the task directory (gzipped)
    diff_sha: str  # of the normalized, uncompressed diff
    diff_gz_sha: str
    status_report: str  # raw `git status --porcelain -z`
    file_metadata: tuple[FileMeta, ...]
    files_changed: tuple[FileChange, ...]
    diff_stat: str
    scope_hash: str
    diff_bytes: int = 0
    diff_from_implementer: str | None = None
    incremental_diff_sha: str | None = None
    incremental_diff_error: str | None = None
    previous_role: str = ""


class Coordination(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    status: str = "pending"
    completed_at: str | None = None
    qa_log_path: str | None = None
    session_id: str | None = None
    blocking_findings: tuple[str, ...] = ()
    worktree_snapshot: WorktreeSnapshot | None = None
    drift_budget: int = 0


class Evidence(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: str  # the first 16 hex digits of the artifact's SHA-256
    type: str
    path: str
    sha256: str
    attached_at: str
    actor: str


class AuditEvent(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    at: str
    actor: str
    action: str
    note: str = ""


class Audit(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    updated_at: str
    updated_by: str
    update_count: int = 0
    git_head: str = ""
    events: tuple[AuditEvent, ...] = ()  # forced secrets, drift resolutions, rebuilds


class TaskContext(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    version: int
    task_id: str
    created_at: str
    created_by: str
    git: GitInfo
    immutable: Immutable
    coordination: dict[str, Coordination]
    audit: Audit
    roles: tuple[str, ...] = DEFAULT_ROLES
    evidence: tuple[Evidence, ...] = ()
    linked_claude_task: str = ""  # a Claude Code task id: its TaskCompleted purges the context
    linked_claude_session: str = ""  # the session of that task (task ids are per session)


class ManifestEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    path: str
    sha256: str
    kind: str  # "source" (task file, standards) or "derived" (context, exports, diffs)


class Manifest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    version: int
    task_id: str
    serializer: str
    normalizer: str
    sources: tuple[ManifestEntry, ...]
    derived: tuple[ManifestEntry, ...]
    task_file: str = ""
    repo_root: str = ""


def decode_context(data: bytes) -> TaskContext:
    """context.json bytes -> TaskContext; an unknown version raises ValueError."""
    head = msgspec.json.decode(data, type=dict[str, object])
    version = head.get("version")
    if version != SCHEMA_VERSION:
        raise ValueError(f"unsupported context schema version {version!r} (this ctxd reads 1)")
    return msgspec.json.decode(data, type=TaskContext)
