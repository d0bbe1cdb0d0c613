"""Task operations: init, get, coordination updates, QA, evidence, drift resolution, rebuild."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import msgspec

from summarizer.tasks import gitops
from summarizer.tasks.canon import check_task_id, is_valid_role, sha256_hex
from summarizer.tasks.env import TaskEnv, check_role, refuse_while_drifted, with_role
from summarizer.tasks.errors import ContextExistsError, TaskValidationError
from summarizer.tasks.exports import read_manifest, write_exports, write_manifest
from summarizer.tasks.models import (
    SCHEMA_VERSION,
    STATUSES,
    Audit,
    Coordination,
    Evidence,
    GitInfo,
    QaResult,
    TaskContext,
)
from summarizer.tasks.sources import build_immutable, load_task_file, section_span

TASK_SOURCE = "task-source.json"  # the task document of a Claude Code task (for rebuild)


def init_context(
    env: TaskEnv,
    task_id: str,
    *,
    task_file: Path | None = None,
    claude_task: dict[str, str] | None = None,
    base_commit: str | None = None,
    link: tuple[str, str] = ("", ""),
) -> TaskContext:
    """Snapshot the task's immutable context once, at task start; write exports and manifest.

    `link` (session, Claude Code task id) names the task whose TaskCompleted purges the
    context; a context built from a Claude Code task is linked to it.
    """
    check_task_id(task_id)
    repo = env.repo
    base = gitops.rev_parse(repo, base_commit or "HEAD")
    if claude_task is not None:
        doc: dict[str, Any] = {
            "title": claude_task.get("subject", ""),
            "description": claude_task.get("description") or claude_task.get("subject", ""),
        }
        raw = msgspec.json.encode(doc)
        source_name, task_sha = TASK_SOURCE, sha256_hex(raw)
    elif task_file is not None:
        doc, raw = load_task_file(task_file)
        task_file = task_file.resolve()
        source_name = str(task_file)
        task_sha = gitops.hash_object(repo, task_file)
    else:
        raise TaskValidationError("give a task: --task-file PATH or --from-claude-task ID")
    immutable, standards = build_immutable(
        doc, repo, mapped=_mapped(env, doc), default_qa=list(env.config.qa_commands)
    )
    if not immutable.standards_citations:
        raise TaskValidationError(
            "the task cites no standards: list them under `standards:` in the task file, or map "
            "its area in the [tasks] citations table of config.toml"
        )
    if gitops.git(repo, ["diff-index", "--quiet", "HEAD", "--"], check=False).returncode:
        env.warn("the working tree is dirty at task start; its changes count as the task's")
    roles = tuple(env.config.roles)
    bad = [r for r in roles if not is_valid_role(r)] or sorted(
        {r for r in roles if roles.count(r) > 1}
    )
    if bad:
        raise TaskValidationError(
            f"[tasks] roles: {bad[0]!r} cannot be a role (lower-case letters, digits, '_' or '-',"
            " starting with a letter, each once)"
        )
    with env.store.lock():
        if env.store.exists(task_id):
            raise ContextExistsError(
                f"{task_id} already has a context; read it with `ctxd task get {task_id}`, "
                f"or remove it first with `ctxd task purge {task_id}`"
            )
        now = env.clock()
        ctx = TaskContext(
            version=SCHEMA_VERSION,
            task_id=task_id,
            created_at=now,
            created_by=env.actor,
            git=GitInfo(head=base, task_file_sha=task_sha),
            immutable=immutable,
            coordination={r: Coordination() for r in roles},
            audit=_first_audit(env, now, base),
            roles=roles,
            linked_claude_task=(claude_task or {}).get("id", "") or link[1],
            linked_claude_session=(claude_task or {}).get("session", "") or link[0],
        )
        if claude_task is not None:
            env.store.write_file(task_id, TASK_SOURCE, raw)
        try:
            ctx = env.commit(ctx, None, "init")
        except Exception:
            env.store.purge(task_id)  # a refused init leaves nothing behind
            raise
        write_exports(env.store, ctx)
        sources = [
            *standards,
            env.store.task_dir(task_id) / TASK_SOURCE if claude_task else Path(source_name),
        ]
        write_manifest(env.store, ctx, repo, sources, source_name)
    return ctx


def get_context(env: TaskEnv, task_id: str) -> TaskContext:
    """The context, with warnings when HEAD moved, or a cited standard or the task file
    changed, since it was built."""
    ctx = env.store.read(task_id)
    current = gitops.head(env.repo)
    if current != ctx.git.head:
        env.warn(
            f"Context created at {ctx.git.head[:12]}, current HEAD is {current[:12]}. "
            "Context may be stale."
        )
    for c in ctx.immutable.standards_citations:
        if _citation_changed(env.repo, c.file, c.section, c.content_sha):
            env.warn(
                f"{c.file}#{c.section} changed since the context was built; run "
                f"`ctxd task rebuild {task_id}`"
            )
    try:
        _check_task_file(env, ctx)
    except TaskValidationError as e:
        env.warn(str(e).removesuffix(" first"))
    except OSError:
        pass  # no manifest: nothing to compare against
    return ctx


def update_agent(
    env: TaskEnv,
    task_id: str,
    role: str,
    *,
    status: str | None = None,
    qa_log: str | None = None,
    session_id: str | None = None,
) -> TaskContext:
    """Update one role's coordination state; starting a role verifies the previous one first."""
    if status is not None and status not in STATUSES:
        raise TaskValidationError(f"unknown status {status!r}: use one of {', '.join(STATUSES)}")
    if status == "in_progress":
        from summarizer.tasks.handoff import verify_previous

        refuse_while_drifted(env.store.read(task_id))  # drift first acknowledged, then verified
        verify_previous(env, task_id, role)
    with env.store.lock():
        ctx = env.store.read(task_id)
        check_role(ctx, role)
        refuse_while_drifted(ctx)
        changes: dict[str, object] = {}
        if status is not None:
            changes["status"] = status
            changes["completed_at"] = env.clock() if status == "done" else None
        if qa_log is not None:
            changes["qa_log_path"] = qa_log
        if session_id is not None:
            changes["session_id"] = session_id
        return env.commit(with_role(ctx, role, **changes), ctx, "update-agent")


def mark_blocked(env: TaskEnv, task_id: str, role: str, finding: str) -> TaskContext:
    """Add a blocking finding to a role and mark it blocked."""
    if not finding.strip():
        raise TaskValidationError("--finding must describe the blocker")
    with env.store.lock():
        ctx = env.store.read(task_id)
        check_role(ctx, role)
        refuse_while_drifted(ctx)
        findings = tuple(sorted({*ctx.coordination[role].blocking_findings, finding.strip()}))
        new = with_role(ctx, role, status="blocked", blocking_findings=findings)
        return env.commit(new, ctx, "mark-blocked")


def record_qa(env: TaskEnv, task_id: str, role: str, log: Path) -> TaskContext:
    """Store a QA log (gzipped, by SHA) as a role's baseline result; refused if the task file
    changed since the context was built."""
    try:
        data = log.read_bytes()
    except OSError as e:
        raise TaskValidationError(f"cannot read QA log {log}: {e.strerror}") from e
    with env.store.lock():
        ctx = env.store.read(task_id)
        check_role(ctx, role)
        refuse_while_drifted(ctx)
        _check_task_file(env, ctx)
        text = data.decode("utf-8", "replace")
        env.check({"qa_log": text})
        sha = sha256_hex(data)
        name = f"qa-{role}.{sha[:16]}.log.gz"
        env.store.write_file(task_id, name, gzip.compress(data, mtime=0))
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        result = QaResult(
            role=role,
            log_path=name,
            log_sha=sha,
            recorded_at=env.clock(),
            summary=(lines[-1][:140] if lines else ""),
        )
        baseline = ctx.immutable.validation_baseline
        others = tuple(r for r in baseline.initial_results if r.role != role)
        baseline = msgspec.structs.replace(
            baseline, status="recorded", initial_results=(*others, result)
        )
        immutable = msgspec.structs.replace(ctx.immutable, validation_baseline=baseline)
        new = with_role(msgspec.structs.replace(ctx, immutable=immutable), role, qa_log_path=name)
        return env.commit(new, ctx, "record-qa")


def attach_evidence(env: TaskEnv, task_id: str, kind: str, path: str) -> Evidence:
    """Link an artifact by path and SHA; prompts cite its id instead of pasting it."""
    target = env.repo / path
    try:
        sha = sha256_hex(target.read_bytes())
    except OSError as e:
        raise TaskValidationError(f"cannot read evidence {path}: {e.strerror}") from e
    with env.store.lock():
        ctx = env.store.read(task_id)
        refuse_while_drifted(ctx)
        evidence = Evidence(
            id=sha[:16], type=kind, path=path, sha256=sha, attached_at=env.clock(), actor=env.actor
        )
        kept = tuple(e for e in ctx.evidence if e.id != evidence.id)
        new = msgspec.structs.replace(ctx, evidence=(*kept, evidence))
        env.commit(new, ctx, "attach-evidence")
    return evidence


def resolve_drift(env: TaskEnv, task_id: str, note: str) -> TaskContext:
    """Record the operator's resolution note and reset every drift budget to 0."""
    if not note.strip():
        raise TaskValidationError("--note must say how the drift was resolved")
    with env.store.lock():
        ctx = env.store.read(task_id)
        new = ctx
        for role in ctx.roles:
            new = with_role(new, role, drift_budget=0)
        return env.commit(new, ctx, "resolve-drift", note.strip())


def rebuild(env: TaskEnv, task_id: str) -> TaskContext:
    """Rehydrate the immutable block from the manifest's sources; coordination is kept."""
    with env.store.lock():
        ctx = env.store.read(task_id)
        manifest = read_manifest(env.store, task_id)
        source = env.store.task_dir(task_id) / TASK_SOURCE
        path = source if manifest.task_file == TASK_SOURCE else Path(manifest.task_file)
        doc, raw = load_task_file(path)
        immutable, standards = build_immutable(
            doc, env.repo, mapped=_mapped(env, doc), default_qa=list(env.config.qa_commands)
        )
        immutable = msgspec.structs.replace(
            immutable, validation_baseline=ctx.immutable.validation_baseline
        )
        task_sha = sha256_hex(raw) if path == source else gitops.hash_object(env.repo, path)
        git = msgspec.structs.replace(ctx.git, task_file_sha=task_sha)
        new = msgspec.structs.replace(ctx, immutable=immutable, git=git)
        new = env.commit(new, ctx, "rebuild", f"from {manifest.task_file}")
        write_exports(env.store, new)
        write_manifest(env.store, new, env.repo, [*standards, path], manifest.task_file)
        return new


def purge(env: TaskEnv, task_id: str) -> bool:
    """Delete the task's directory (idempotent)."""
    check_task_id(task_id)
    with env.store.lock():
        return env.store.purge(task_id)


def list_tasks(env: TaskEnv) -> list[dict[str, Any]]:
    """One summary per cached task: title, each role's status, drift."""
    rows = []
    for task_id in env.store.list():
        ctx = env.store.read(task_id)
        rows.append(
            {
                "task_id": task_id,
                "title": ctx.immutable.task_snapshot.title,
                "created_at": ctx.created_at,
                "statuses": {
                    r: ctx.coordination[r].status for r in ctx.roles if r in ctx.coordination
                },
                "drift_budget": sum(c.drift_budget for c in ctx.coordination.values()),
            }
        )
    return rows


def _mapped(env: TaskEnv, doc: dict[str, Any]) -> list[str]:
    area, priority = str(doc.get("area") or ""), str(doc.get("priority") or "")
    table = env.config.citations
    keys = ["*", area, f"{area}:{priority}"] if area else ["*"]
    return [ref for key in keys for ref in table.get(key, [])]


def _first_audit(env: TaskEnv, now: str, head: str) -> Audit:
    return Audit(updated_at=now, updated_by=env.actor, git_head=head)


def _check_task_file(env: TaskEnv, ctx: TaskContext) -> None:
    manifest = read_manifest(env.store, ctx.task_id)
    path = Path(manifest.task_file)
    if manifest.task_file in ("", "task-source.json") or not path.is_file():
        return
    if gitops.hash_object(env.repo, path) != ctx.git.task_file_sha:
        raise TaskValidationError(
            f"{manifest.task_file} changed since the context was built; run "
            f"`ctxd task rebuild {ctx.task_id}` first"
        )


def _citation_changed(repo: Path, file: str, section: str, sha: str) -> bool:
    try:
        lines = (repo / file).read_text(encoding="utf-8").replace("\r\n", "\n").split("\n")
    except OSError:
        return True
    span = section_span(lines, section)
    if span is None:
        return True
    return sha256_hex("\n".join(lines[span[0] - 1 : span[1]]).encode())[:16] != sha
