"""The task store: concurrency, crash safety, secrets, ids, schema, CRLF/LF determinism."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from helpers import poll
from task_helpers import ctxd, edit, git, make_repo, task_env

from indexer.errors import CtxdError
from summarizer.tasks import handoff, service
from summarizer.tasks.canon import sha256_hex
from summarizer.tasks.errors import (
    ContextExistsError,
    DriftError,
    InvalidTaskIdError,
    LockTimeoutError,
    TaskError,
    TaskValidationError,
)
from summarizer.tasks.models import decode_context

TASK = "TASK-0824"
# A syntactically valid AWS access key id (the kind the indexer's secret rules know).
AWS_KEY = "AKIA" + "Q3EGH7XJ2LMN5PRT"


def _init(tmp_path: Path) -> tuple[Path, Path]:
    repo = make_repo(tmp_path)
    state = tmp_path / "state"
    env, _ = task_env(repo, state)
    service.init_context(env, TASK, task_file=repo / "tasks" / "TASK-0824.task.yaml")
    return repo, state


def test_eight_concurrent_update_agent_processes_lose_no_update(tmp_path: Path) -> None:
    repo, state = _init(tmp_path)
    base = [sys.executable, "-m", "summarizer.cli.app", "task", "update-agent", TASK]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    env.pop("CTXD_HOME", None)
    procs = [
        subprocess.Popen(
            [*base, "--agent", "implementer", "--session-id", f"s-{i}", "--state-dir", str(state)],
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(8)
    ]
    for p in procs:
        _out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    ctx = decode_context((state / "tasks" / TASK / "context.json").read_bytes())
    assert ctx.audit.update_count == 8  # each read-modify-write saw the previous one
    assert ctx.coordination["implementer"].session_id in {f"s-{i}" for i in range(8)}


def test_sigkill_during_snapshot_leaves_the_previous_state_intact(tmp_path: Path) -> None:
    repo, state = _init(tmp_path)
    env, warnings = task_env(repo, state)
    edit(repo, "src/a.py", 1, "a1 = 'first'")
    first = handoff.snapshot_worktree(env, TASK, "implementer")
    context_path = state / "tasks" / TASK / "context.json"
    before = context_path.read_bytes()
    edit(repo, "src/a.py", 2, "a2 = 'second'")
    marker = tmp_path / "paused"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "summarizer.cli.app",
            "task",
            "snapshot-worktree",
            TASK,
            "--agent",
            "implementer",
            "--state-dir",
            str(state),
        ],
        cwd=repo,
        env={
            **os.environ,
            "PYTHONPATH": str(Path(__file__).resolve().parents[3]),
            "CTXD_TASK_PAUSE_AT": "snapshot-worktree",
            "CTXD_TASK_PAUSE_FILE": str(marker),
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    poll(marker.exists, timeout=60)  # the new diff is written, context.json not yet
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert context_path.read_bytes() == before
    ctx = decode_context(before)
    snap = ctx.coordination["implementer"].worktree_snapshot
    assert snap is not None and snap.diff_sha == first.diff_sha
    stored = (state / "tasks" / TASK / snap.diff_from_base).read_bytes()
    assert sha256_hex(stored) == snap.diff_gz_sha
    assert b"a1 = 'first'" in gzip.decompress(stored)
    # The next command recovers the lock left by the killed process and works.
    again = handoff.snapshot_worktree(env, TASK, "implementer")
    assert any("stale task lock" in w for w in warnings)
    assert again.diff_sha != first.diff_sha
    names = sorted(p.name for p in (state / "tasks" / TASK).glob("*.diff.gz"))
    assert names == [again.diff_from_base]  # the superseded diffs are pruned


def test_secrets_are_refused_naming_the_pattern_unless_forced(tmp_path: Path) -> None:
    repo, state = _init(tmp_path)
    env, _ = task_env(repo, state)
    finding = f"the deploy key {AWS_KEY} is committed"
    with pytest.raises(TaskValidationError, match=r"Potential secret detected \(pattern: aws"):
        service.mark_blocked(env, TASK, "reviewer", finding)
    assert service.get_context(env, TASK).coordination["reviewer"].blocking_findings == ()
    # A secret in the working tree is refused at snapshot time too.
    edit(repo, "src/a.py", 1, f"KEY = '{AWS_KEY}'")
    with pytest.raises(TaskValidationError, match="Use --force-secrets to bypass"):
        handoff.snapshot_worktree(env, TASK, "implementer")
    env.force_secrets = True
    handoff.snapshot_worktree(env, TASK, "implementer")
    service.mark_blocked(env, TASK, "reviewer", finding)
    ctx = service.get_context(env, TASK)
    assert ctx.coordination["reviewer"].blocking_findings == (finding,)
    forced = [e for e in ctx.audit.events if e.action == "force-secrets"]
    assert [e.note.split(" ")[0] for e in forced] == ["snapshot-worktree", "patterns:"]
    assert all("aws" in e.note and e.actor == "tester" for e in forced)
    # Through the CLI: one JSON error naming the pattern, exit 1.
    out = ctxd(
        "task",
        "mark-blocked",
        TASK,
        "--agent",
        "validator",
        "--finding",
        finding,
        "--format",
        "json",
        cwd=repo,
        state=state,
    )
    assert out.returncode == 1
    doc = json.loads(out.stdout)
    assert doc["success"] is False and "Potential secret detected (pattern: aws" in doc["error"]


def test_crlf_and_lf_checkouts_hash_alike(tmp_path: Path) -> None:
    origin = make_repo(tmp_path / "origin")
    snaps = []
    for name, autocrlf in (("lf", "false"), ("crlf", "true")):
        clone = tmp_path / name
        subprocess.run(
            ["git", "-c", f"core.autocrlf={autocrlf}", "clone", "-q", str(origin), str(clone)],
            check=True,
        )
        git(clone, "config", "core.autocrlf", autocrlf)
        raw = (clone / "src" / "a.py").read_bytes()
        assert (b"\r\n" in raw) == (name == "crlf")
        env, _ = task_env(clone, tmp_path / f"state-{name}")
        service.init_context(env, TASK, task_file=clone / "tasks" / "TASK-0824.task.yaml")
        edit(clone, "src/a.py", 4, "a4 = 'changed'")
        snaps.append(handoff.snapshot_worktree(env, TASK, "implementer"))
    lf, crlf = snaps
    assert lf.diff_sha == crlf.diff_sha
    assert lf.files_changed == crlf.files_changed
    assert lf.scope_hash == crlf.scope_hash


def test_init_twice_bad_ids_frozen_models_and_staleness(tmp_path: Path) -> None:
    repo, state = _init(tmp_path)
    env, warnings = task_env(repo, state)
    with pytest.raises(ContextExistsError, match="already has a context"):
        service.init_context(env, TASK, task_file=repo / "tasks" / "TASK-0824.task.yaml")
    for bad in ("../etc", ".hidden", "a/b", "", "x" * 65):
        with pytest.raises(InvalidTaskIdError):
            service.get_context(env, bad)
    ctx = service.get_context(env, TASK)
    with pytest.raises(AttributeError):
        ctx.immutable.task_snapshot.title = "changed"  # type: ignore[misc]
    with pytest.raises(ValueError, match="unsupported context schema version 2"):
        decode_context(msgspec.json.encode({**msgspec.to_builtins(ctx), "version": 2}))
    assert not warnings
    (repo / "later.txt").write_text("x\n")
    git(repo, "add", "later.txt")
    git(repo, "commit", "-qm", "later")
    service.get_context(env, TASK)
    assert any("Context may be stale." in w for w in warnings)
    assert oct((state / "tasks" / TASK / "context.json").stat().st_mode & 0o777) == "0o600"
    assert oct((state / "tasks" / TASK).stat().st_mode & 0o777) == "0o700"
    assert service.purge(env, TASK) is True
    assert service.purge(env, TASK) is False  # idempotent
    assert service.list_tasks(env) == []


def test_a_symlinked_context_is_not_followed(tmp_path: Path) -> None:
    repo, state = _init(tmp_path)
    env, _ = task_env(repo, state)
    path = state / "tasks" / TASK / "context.json"
    target = tmp_path / "elsewhere.json"
    target.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(target)
    with pytest.raises(TaskError, match="symlink"):
        service.get_context(env, TASK)
    # A symlinked task directory is refused too, for reads and for writes.
    path.unlink()
    real = tmp_path / "real-task"
    (state / "tasks" / TASK).rename(real)
    (state / "tasks" / TASK).symlink_to(real)
    with pytest.raises(TaskError, match="symlink"):
        service.get_context(env, TASK)
    with pytest.raises(CtxdError, match="symlink"):
        service.mark_blocked(env, TASK, "reviewer", "x")
    assert list(real.glob("*.tmp")) == [] and not (real / "context.json").exists()


def test_staged_only_edits_are_drift(tmp_path: Path) -> None:
    repo, state = _init(tmp_path)
    env, _ = task_env(repo, state)
    edit(repo, "src/a.py", 1, "a1 = 'x'")
    handoff.snapshot_worktree(env, TASK, "implementer")
    git(repo, "add", "src/a.py")
    with pytest.raises(DriftError, match="git status changed"):
        handoff.verify_worktree(env, TASK, "implementer")


def test_default_state_dir_inside_the_repo_is_not_part_of_the_snapshot(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    env, warnings = task_env(repo, repo / ".ctxd")  # the default layout: <project>/.ctxd
    edit(repo, "src/a.py", 1, "a1 = 'dirty before init'")
    service.init_context(env, TASK, task_file=repo / "tasks" / "TASK-0824.task.yaml")
    assert any("dirty at task start" in w for w in warnings)
    snap = handoff.snapshot_worktree(env, TASK, "implementer")
    assert [f.path for f in snap.files_changed] == ["src/a.py"]
    assert ".ctxd" not in snap.status_report
    handoff.verify_worktree(env, TASK, "implementer")  # its own writes are not drift


def test_lock_timeout_names_the_lock(tmp_path: Path) -> None:
    import fcntl

    repo, state = _init(tmp_path)
    env, _ = task_env(repo, state, lock_timeout_s=0.2)
    fd = os.open(state / "tasks" / ".context_store.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(LockTimeoutError, match=r"context_store\.lock is held"):
            service.mark_blocked(env, TASK, "reviewer", "x")
    finally:
        os.close(fd)
    service.mark_blocked(env, TASK, "reviewer", "x")  # free again


def test_a_large_diff_is_stored_with_a_warning(tmp_path: Path) -> None:
    repo, state = _init(tmp_path)
    env, warnings = task_env(repo, state, diff_warn_bytes=1000)
    (repo / "src" / "big.txt").write_text("".join(f"line {i}\n" for i in range(400)))
    snap = handoff.snapshot_worktree(env, TASK, "implementer")
    assert snap.diff_bytes > 1000
    assert any("exceeds" in w and "Review for unintended binary files." in w for w in warnings)
