"""What every task operation needs: the store, the repository, the settings, actor and clock."""

from __future__ import annotations

import getpass
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from indexer import TasksConfig
from summarizer.tasks.errors import DriftError, TaskValidationError
from summarizer.tasks.models import Audit, AuditEvent, Coordination, TaskContext
from summarizer.tasks.store import TaskStore, Warn


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def default_actor() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid-{os.getuid()}"


class TaskEnv:
    """The collaborators of the task operations, passed in (tests build their own)."""

    def __init__(
        self,
        *,
        state_root: Path,
        repo: Path,
        config: TasksConfig,
        actor: str = "",
        force_secrets: bool = False,
        warn: Warn | None = None,
        clock: Callable[[], str] = utc_now,
    ) -> None:
        self.warn: Warn = warn or (lambda _msg: None)
        self.store = TaskStore(
            state_root / "tasks",
            lock_timeout_s=config.lock_timeout_s,
            field_warn_bytes=config.field_warn_bytes,
            warn=self.warn,
        )
        self.repo = repo
        self.config = config
        self.actor = actor or default_actor()
        self.force_secrets = force_secrets
        self.clock = clock
        self._forced: list[str] = []
        # The state directory inside the repository is never part of a worktree snapshot.
        try:
            rel = state_root.resolve().relative_to(repo.resolve()).as_posix()
            self.exclude = [rel] if rel != "." else []
        except ValueError:
            self.exclude = []

    def check(self, values: dict[str, str]) -> None:
        """Scan text stored beside context.json (diffs, QA logs); what --force-secrets let
        through is audited by the next commit."""
        self._forced += self.store.check_values(values, force_secrets=self.force_secrets)

    def commit(
        self, ctx: TaskContext, previous: TaskContext | None, action: str, note: str = ""
    ) -> TaskContext:
        """Stamp the audit block and write context.json (secret-checked against `previous`)."""
        from summarizer.tasks import gitops  # git only when a write happens

        now = self.clock()
        events = ctx.audit.events
        if note or action in ("resolve-drift", "rebuild", "init"):
            events = (*events, AuditEvent(at=now, actor=self.actor, action=action, note=note))
        if self._forced:
            kinds = ", ".join(sorted(set(self._forced)))
            forced = AuditEvent(
                at=now, actor=self.actor, action="force-secrets", note=f"{action} patterns: {kinds}"
            )
            events = (*events, forced)
            self._forced = []
        audit = Audit(
            updated_at=now,
            updated_by=self.actor,
            update_count=ctx.audit.update_count + (1 if previous is not None else 0),
            git_head=gitops.head(self.repo),
            events=events,
        )
        ctx = msgspec.structs.replace(ctx, audit=audit)
        return self.store.write_context(
            ctx, previous=previous, force_secrets=self.force_secrets, actor=self.actor, now=now
        )


def check_role(ctx: TaskContext, role: str) -> str:
    if role not in ctx.roles:
        raise TaskValidationError(
            f"unknown role {role!r} for {ctx.task_id}: use one of {', '.join(ctx.roles)}"
        )
    return role


def refuse_while_drifted(ctx: TaskContext) -> None:
    """State-changing verbs wait for an operator to acknowledge drift (resolve-drift --note)."""
    drifted = {r: c.drift_budget for r, c in sorted(ctx.coordination.items()) if c.drift_budget}
    if drifted:
        counts = ", ".join(f"{r}={n}" for r, n in drifted.items())
        raise DriftError(
            f"{ctx.task_id} has unresolved drift (drift_budget {counts}); inspect it with "
            f"`ctxd task verify-worktree`, then run `ctxd task resolve-drift {ctx.task_id} "
            '--note "what was done"`',
            [],
        )


def with_role(ctx: TaskContext, role: str, **changes: object) -> TaskContext:
    """ctx with one role's coordination fields replaced."""
    current = ctx.coordination.get(role, Coordination())
    coordination = dict(ctx.coordination)
    coordination[role] = msgspec.structs.replace(current, **changes)
    return msgspec.structs.replace(ctx, coordination=coordination)
