"""The task store under <state>/tasks/: one lock, atomic private writes, secret and size checks."""

from __future__ import annotations

import errno
import os
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec

from indexer import (
    FILE_MODE,
    ensure_private_dir,
    flock_within,
    secret_kinds,
    sweep_temp_files,
    write_atomic,
)
from summarizer.common.nofollow import is_plain_dir, read_nofollow
from summarizer.tasks.canon import canonical_json, check_task_id
from summarizer.tasks.errors import (
    ContextNotFoundError,
    LockTimeoutError,
    TaskError,
    TaskValidationError,
)
from summarizer.tasks.models import AuditEvent, TaskContext, decode_context

LOCK_NAME = ".context_store.lock"
CONTEXT = "context.json"
MANIFEST = "context.manifest"
FIELD_WARN_BYTES = 2048
Warn = Callable[[str], None]


class TaskStore:
    """Every file of the task cache; all writes happen under `lock()`."""

    def __init__(
        self,
        root: Path,
        *,
        lock_timeout_s: float = 10.0,
        field_warn_bytes: int = FIELD_WARN_BYTES,
        warn: Warn | None = None,
    ) -> None:
        self.root = root
        self.lock_timeout_s = lock_timeout_s
        self.field_warn_bytes = field_warn_bytes
        self.warn: Warn = warn or (lambda _msg: None)

    def task_dir(self, task_id: str) -> Path:
        return self.root / check_task_id(task_id)

    def exists(self, task_id: str) -> bool:
        path = self.task_dir(task_id) / CONTEXT
        return path.is_file() and not path.is_symlink()

    @contextmanager
    def lock(self) -> Iterator[None]:
        """The one store lock (flock, 10 s timeout). A holder killed mid-write leaves its pid in
        the lock file: the next holder finds it dead, sweeps the half-written temp files and goes
        on (the atomic writes mean the committed files are whole)."""
        ensure_private_dir(self.root)
        path = self.root / LOCK_NAME
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
        try:
            if not flock_within(fd, self.lock_timeout_s, poll_s=0.01):
                raise LockTimeoutError(
                    f"{path} is held by another ctxd task command for over "
                    f"{self.lock_timeout_s:g} s; retry when it has finished"
                )
            self._recover(fd)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            try:
                yield
            finally:
                os.ftruncate(fd, 0)
        finally:
            os.close(fd)  # closing releases the flock

    def _recover(self, fd: int) -> None:
        previous = os.pread(fd, 32, 0).strip()
        if not previous.isdigit() or int(previous) == os.getpid():
            return
        pid = int(previous)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            pass
        except PermissionError:
            return
        else:
            return  # alive: it released the lock without clearing (cannot happen), leave it
        swept = sweep_temp_files(self.root)
        self.warn(
            f"recovered a stale task lock left by process {pid} (killed mid-write); "
            f"removed {swept} partial file(s), the committed state is intact"
        )

    def read(self, task_id: str) -> TaskContext:
        """The task's context; ContextNotFoundError if it has none."""
        self._refuse_symlinks(task_id)
        path = self.task_dir(task_id) / CONTEXT
        try:
            data = read_nofollow(str(path))
        except FileNotFoundError:
            raise ContextNotFoundError(
                f"no context for {task_id}: create it with `ctxd task init {task_id} --task-file …`"
            ) from None
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise TaskError(f"{path} is a symlink; ctxd does not follow it") from None
            raise TaskError(f"cannot read {path}: {e.strerror}") from e
        try:
            return decode_context(data)
        except (msgspec.DecodeError, ValueError) as e:
            raise TaskError(
                f"{path} is not a valid task context ({e}); run `ctxd task rebuild {task_id}`"
            ) from e

    def write_context(
        self,
        ctx: TaskContext,
        *,
        previous: TaskContext | None,
        force_secrets: bool,
        actor: str,
        now: str,
    ) -> TaskContext:
        """Check the values new since `previous` for secrets and size, then write context.json.

        A secret refuses the write unless force_secrets, which is recorded in the audit block.
        """
        new_leaves = _leaves(msgspec.to_builtins(ctx))
        if previous is not None:
            # A value already stored at the same place (list positions aside) was checked, or
            # forced, when it was written: only what is new is scanned.
            old = {(_place(k), v) for k, v in _leaves(msgspec.to_builtins(previous)).items()}
            new_leaves = {k: v for k, v in new_leaves.items() if (_place(k), v) not in old}
        kinds = self.check_values(new_leaves, force_secrets=force_secrets)
        if kinds:
            event = AuditEvent(
                at=now, actor=actor, action="force-secrets", note="patterns: " + ", ".join(kinds)
            )
            ctx = msgspec.structs.replace(
                ctx, audit=msgspec.structs.replace(ctx.audit, events=(*ctx.audit.events, event))
            )
        self.write_file(ctx.task_id, CONTEXT, canonical_json(msgspec.to_builtins(ctx)))
        return ctx

    def check_values(self, values: dict[str, str], *, force_secrets: bool) -> list[str]:
        """Scan values for secrets and oversize fields; the pattern kinds forced past, if any."""
        forced: list[str] = []
        for field, text in sorted(values.items()):
            size = len(text.encode("utf-8", "surrogatepass"))
            if size > self.field_warn_bytes:
                self.warn(
                    f"field {field} is {size} bytes (over {self.field_warn_bytes}); keep long "
                    "text in its source file and cite it"
                )
            # What the index would store redacted: every rule, on every decoded form.
            found = secret_kinds(text)
            if not found:
                continue
            if not force_secrets:
                raise TaskValidationError(
                    f"Potential secret detected (pattern: {found[0]}) in {field}. "
                    "Use --force-secrets to bypass."
                )
            self.warn(f"storing a potential secret (pattern: {', '.join(found)}) in {field}")
            forced += found
        return sorted(set(forced))

    def write_file(self, task_id: str, name: str, data: bytes) -> Path:
        """Atomically write one private file in the task directory."""
        directory = self.task_dir(task_id)
        ensure_private_dir(directory)
        path = directory / name
        write_atomic(path, data, root=self.root.parent)  # walked from the state dir by fds
        return path

    def read_file(self, task_id: str, name: str) -> bytes:
        self._refuse_symlinks(task_id)
        return read_nofollow(str(self.task_dir(task_id) / name))

    def _refuse_symlinks(self, task_id: str) -> None:
        """The tasks directory and the task's own directory must be real directories."""
        for directory in (self.root, self.task_dir(task_id)):
            if is_plain_dir(str(directory)) is False:
                raise TaskError(
                    f"{directory} is a symlink or not a directory; ctxd does not follow symlinks "
                    "in its state directory (remove it, then run the command again)"
                )

    def purge(self, task_id: str) -> bool:
        """Delete the task directory (idempotent); True if there was one."""
        directory = self.task_dir(task_id)
        kind = is_plain_dir(str(directory))
        if kind is None:
            return False
        if kind is False:  # a symlink or a file where the directory should be: remove the name
            directory.unlink()
            return True
        shutil.rmtree(directory)
        return True

    def list(self) -> list[str]:
        """Task ids with a context, sorted."""
        if is_plain_dir(str(self.root)) is not True:
            return []
        return sorted(
            p.name
            for p in self.root.iterdir()
            if not p.name.startswith(".") and (p / CONTEXT).is_file() and not p.is_symlink()
        )


def _place(field: str) -> str:
    return re.sub(r"\[\d+\]", "[]", field)


def _leaves(value: Any, prefix: str = "") -> dict[str, str]:
    """Every string in a JSON-like value, keyed by its dotted path."""
    out: dict[str, str] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            out.update(_leaves(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            out.update(_leaves(v, f"{prefix}[{i}]"))
    elif isinstance(value, str):
        out[prefix] = value
    return out
