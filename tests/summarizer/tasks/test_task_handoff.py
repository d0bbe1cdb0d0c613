"""implementer -> reviewer -> validator on a real dirty git tree, and every drift case."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
from task_helpers import edit, git, make_repo, task_env

from summarizer.tasks import handoff, service
from summarizer.tasks.errors import ContextNotFoundError, DriftError
from summarizer.tasks.exports import previous_summary
from summarizer.tasks.handoff import OVERLAP_MESSAGE
from summarizer.tasks.worktree import MSG_BASE_CHANGED, MSG_CLEAN, MSG_COMMITTED

TASK = "TASK-0824"


@pytest.fixture
def started(tmp_path: Path) -> tuple[Path, object]:
    """A task whose implementer edited src/a.py and snapshotted."""
    repo = make_repo(tmp_path)
    env, _ = task_env(repo, tmp_path / "state")
    service.init_context(env, TASK, task_file=repo / "tasks" / "TASK-0824.task.yaml")
    service.update_agent(env, TASK, "implementer", status="in_progress")
    edit(repo, "src/a.py", 3, "a3 = 'implemented'")
    (repo / "src" / "new.py").write_text("added = True\n")  # untracked files count too
    handoff.snapshot_worktree(env, TASK, "implementer")
    service.update_agent(env, TASK, "implementer", status="done")
    return repo, env


def _budget(env: object, role: str) -> int:
    ctx = service.get_context(env, TASK)  # type: ignore[arg-type]
    return ctx.coordination[role].drift_budget


def test_three_roles_hand_off_a_dirty_tree(started: tuple[Path, object]) -> None:
    repo, env = started
    user_index = (repo / ".git" / "index").read_bytes()
    service.update_agent(env, TASK, "reviewer", status="in_progress")  # verifies the implementer
    edit(repo, "src/c.py", 18, "c18 = 'reviewed'")
    snap = handoff.snapshot_worktree(env, TASK, "reviewer")
    service.update_agent(env, TASK, "reviewer", status="done")
    service.update_agent(env, TASK, "validator", status="in_progress")  # verifies the reviewer
    service.update_agent(env, TASK, "validator", status="done")

    # Cumulative diff: both roles' edits; incremental diff: only the reviewer's.
    cumulative = handoff.get_diff(env, TASK, "reviewer", "from_base")
    text = gzip.decompress(Path(cumulative["path"]).read_bytes()).decode()
    assert "a3 = 'implemented'" in text and "c18 = 'reviewed'" in text and "new.py" in text
    inc = handoff.get_diff(env, TASK, "reviewer", "incremental")
    inc_text = gzip.decompress(Path(inc["path"]).read_bytes()).decode()
    assert "c18 = 'reviewed'" in inc_text
    assert "implemented" not in inc_text and "new.py" not in inc_text
    assert snap.incremental_diff_error is None
    # previous_sha256 links the reviewer's view of a file to the implementer's.
    by_path = {f.path: f for f in snap.files_changed}
    assert by_path["src/a.py"].previous_sha256 == by_path["src/a.py"].sha256
    assert by_path["src/c.py"].previous_sha256 == ""
    # The user's index and files were never touched; the tree is still dirty.
    assert (repo / ".git" / "index").read_bytes() == user_index
    assert "new.py" in git(repo, "status", "--porcelain")
    ctx = service.get_context(env, TASK)
    assert [ctx.coordination[r].status for r in ctx.roles] == ["done", "done", "done"]
    summary = previous_summary(ctx, "validator")
    assert summary is not None and summary["role"] == "reviewer"
    assert summary["snapshot"]["diff_sha"] == snap.diff_sha
    assert summary["snapshot"]["files"] == ["M src/a.py", "M src/c.py", "A src/new.py"]
    assert previous_summary(ctx, "implementer") is None
    assert ctx.audit.update_count > 5


def _drift_message(env: object, role: str = "implementer") -> str:
    with pytest.raises(DriftError) as caught:
        handoff.verify_worktree(env, TASK, role)  # type: ignore[arg-type]
    return str(caught.value)


def test_manual_edit_is_reported_file_by_file_and_blocks_until_resolved(
    started: tuple[Path, object],
) -> None:
    repo, env = started
    edit(repo, "src/b.py", 5, "b5 = 'by hand'")
    message = _drift_message(env)
    assert message.startswith("Working tree drift detected after implementer finished:")
    assert "  src/b.py:\n    Expected SHA: (unchanged from base)\n    Current SHA:  " in message
    assert "Files were modified outside the agent workflow." in message
    assert "src/a.py" not in message
    assert _budget(env, "implementer") == 1
    with pytest.raises(DriftError, match="unresolved drift"):
        service.update_agent(env, TASK, "reviewer", status="in_progress")  # type: ignore[arg-type]
    with pytest.raises(DriftError, match="unresolved drift"):
        handoff.snapshot_worktree(env, TASK, "reviewer")  # type: ignore[arg-type]
    assert _budget(env, "implementer") == 1  # refused before verifying again
    edit(repo, "src/b.py", 5, "b5 = 5")
    service.resolve_drift(env, TASK, "hand edit reverted")  # type: ignore[arg-type]
    assert _budget(env, "implementer") == 0
    service.update_agent(env, TASK, "reviewer", status="in_progress")  # type: ignore[arg-type]
    events = service.get_context(env, TASK).audit.events  # type: ignore[arg-type]
    assert any(e.action == "resolve-drift" and e.note == "hand edit reverted" for e in events)


def test_premature_commit(started: tuple[Path, object]) -> None:
    repo, env = started
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "too early")
    message = _drift_message(env)
    assert message.splitlines()[0] == MSG_COMMITTED
    assert _budget(env, "implementer") == 1


def test_rebase_moves_the_base(started: tuple[Path, object]) -> None:
    repo, env = started
    git(repo, "stash", "-u")  # only inside this temporary repository
    git(repo, "checkout", "-q", "-b", "upstream", "HEAD")
    (repo / "README").write_text("upstream\n")
    git(repo, "add", "README")
    git(repo, "commit", "-qm", "upstream change")
    git(repo, "checkout", "-q", "main")
    git(repo, "rebase", "-q", "upstream")
    git(repo, "stash", "pop", "-q")
    message = _drift_message(env)
    assert message.splitlines()[0] == MSG_BASE_CHANGED
    assert _budget(env, "implementer") == 1


@pytest.mark.parametrize("how", ["stash", "reset"])
def test_stash_or_reset(started: tuple[Path, object], how: str) -> None:
    repo, env = started
    if how == "stash":
        git(repo, "stash", "-u")
    else:
        git(repo, "reset", "-q", "--hard")
        (repo / "src" / "new.py").unlink()
    message = _drift_message(env)
    assert message.splitlines()[0] == MSG_CLEAN
    assert "  src/a.py:\n    Expected SHA: " in message
    assert "    Current SHA:  (unchanged from base)" in message
    assert _budget(env, "implementer") == 1


def test_chmod_only_change(started: tuple[Path, object]) -> None:
    repo, env = started
    os.chmod(repo / "src" / "a.py", 0o755)
    message = _drift_message(env)
    assert "  src/a.py:\n    Expected mode/size: 644" in message
    assert "Current mode/size:  755" in message
    assert _budget(env, "implementer") == 1


def test_deleted_scope_file(started: tuple[Path, object]) -> None:
    repo, env = started
    (repo / "src" / "b.py").unlink()
    message = _drift_message(env)
    assert "Task scope changed: file renamed or deleted: src/b.py" in message
    assert _budget(env, "implementer") == 1
    _drift_message(env)  # every failed verification counts
    assert _budget(env, "implementer") == 2
    assert (
        "  src/b.py:\n    Expected SHA: (unchanged from base)\n    Current SHA:  (deleted)"
        in message
    )


def test_missing_snapshot_blocks_the_handoff(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    env, _ = task_env(repo, tmp_path / "state")
    service.init_context(env, TASK, task_file=repo / "tasks" / "TASK-0824.task.yaml")
    edit(repo, "src/a.py", 1, "a1 = 'x'")
    with pytest.raises(ContextNotFoundError, match="No snapshot found for implementer"):
        service.update_agent(env, TASK, "reviewer", status="in_progress")
    # Not drift: nothing to acknowledge; the implementer snapshots and the handoff goes on.
    assert _budget(env, "implementer") == 0
    handoff.snapshot_worktree(env, TASK, "implementer")
    service.update_agent(env, TASK, "reviewer", status="in_progress")


def test_overlapping_reviewer_edits_store_the_conflict_message(
    started: tuple[Path, object],
) -> None:
    repo, env = started
    service.update_agent(env, TASK, "reviewer", status="in_progress")  # type: ignore[arg-type]
    edit(repo, "src/a.py", 3, "a3 = 'reviewer rewrote the implementer line'")
    snap = handoff.snapshot_worktree(env, TASK, "reviewer")  # type: ignore[arg-type]
    assert snap.diff_from_implementer is None and snap.incremental_diff_sha is None
    expected_head = OVERLAP_MESSAGE.split("{details}")[0].format(task=TASK, role="reviewer")
    assert snap.incremental_diff_error is not None
    assert snap.incremental_diff_error.startswith(expected_head)
    assert "src/a.py" in snap.incremental_diff_error  # git's conflict details
    with pytest.raises(ContextNotFoundError, match="reviewer edits overlap"):
        handoff.get_diff(env, TASK, "reviewer", "incremental")  # type: ignore[arg-type]
    assert handoff.get_diff(env, TASK, "reviewer", "from_base")["sha256"] == snap.diff_sha  # type: ignore[arg-type]
    # The scratch index left the user's worktree as it was; an overlap is no drift.
    assert "reviewer rewrote" in (repo / "src" / "a.py").read_text()
    handoff.verify_worktree(env, TASK, "reviewer")  # type: ignore[arg-type]
    assert _budget(env, "reviewer") == 0 and _budget(env, "implementer") == 0


def test_cli_verify_prints_the_report_and_json_shape(started: tuple[Path, object]) -> None:
    from task_helpers import ctxd

    repo, env = started
    state = env.store.root.parent  # type: ignore[attr-defined]
    ok = ctxd(
        "task",
        "verify-worktree",
        TASK,
        "--expected-agent",
        "implementer",
        "--format",
        "json",
        cwd=repo,
        state=state,
    )
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout)
    assert doc["success"] is True and doc["error"] is None and doc["data"]["verified"] is True
    edit(repo, "src/c.py", 2, "c2 = 'by hand'")
    bad = ctxd(
        "task",
        "verify-worktree",
        TASK,
        "--expected-agent",
        "implementer",
        "--format",
        "json",
        cwd=repo,
        state=state,
    )
    assert bad.returncode == 1
    doc = json.loads(bad.stdout)
    assert doc["success"] is False and doc["data"] is None
    assert doc["error"].startswith("Working tree drift detected after implementer finished:")
    text = ctxd(
        "task", "verify-worktree", TASK, "--expected-agent", "implementer", cwd=repo, state=state
    )
    assert text.returncode == 1 and text.stderr.startswith("ERROR: Working tree drift detected")


def test_adjacent_but_not_overlapping_edits_still_give_an_incremental_diff(
    started: tuple[Path, object],
) -> None:
    repo, env = started
    service.update_agent(env, TASK, "reviewer", status="in_progress")  # type: ignore[arg-type]
    edit(repo, "src/a.py", 4, "a4 = 'reviewer, next to the implementer line'")
    snap = handoff.snapshot_worktree(env, TASK, "reviewer")  # type: ignore[arg-type]
    assert snap.incremental_diff_error is None
    inc = handoff.get_diff(env, TASK, "reviewer", "incremental")  # type: ignore[arg-type]
    text = gzip.decompress(Path(inc["path"]).read_bytes()).decode()
    assert "+a4 = 'reviewer, next to the implementer line'" in text
    assert "implemented" not in text


def test_every_verb_answers_json_success_data_error(tmp_path: Path) -> None:
    from task_helpers import ctxd

    from summarizer.cli.parsers.task import _VERBS

    repo = make_repo(tmp_path)
    state = tmp_path / "state"
    (tmp_path / "qa.log").write_text("all good\n")
    calls = [
        ["init", TASK, "--task-file", "tasks/TASK-0824.task.yaml"],
        ["get", TASK],
        ["update-agent", TASK, "--agent", "implementer", "--status", "in_progress"],
        ["snapshot-worktree", TASK, "--agent", "implementer"],
        ["verify-worktree", TASK, "--expected-agent", "implementer"],
        ["get-diff", TASK, "--agent", "implementer", "--print"],
        ["record-qa", TASK, "--agent", "implementer", "--from", str(tmp_path / "qa.log")],
        ["attach-evidence", TASK, "--type", "plan", "--path", "standards/global.md"],
        ["mark-blocked", TASK, "--agent", "reviewer", "--finding", "needs a test"],
        ["resolve-drift", TASK, "--note", "nothing drifted"],
        ["rebuild", TASK],
        ["list"],
        ["purge", TASK],
    ]
    assert sorted(c[0] for c in calls) == sorted(name for name, _ in _VERBS)
    for call in calls:
        if call[0] == "snapshot-worktree":
            edit(repo, "src/a.py", 1, "a1 = 'json'")
        out = ctxd("task", *call, "--format", "json", cwd=repo, state=state)
        doc = json.loads(out.stdout)
        assert set(doc) == {"success", "data", "error"}, call
        assert doc["success"] is True and doc["error"] is None, (call, doc, out.stderr)
        assert out.returncode == 0
    gone = ctxd("task", "get", TASK, "--format", "json", cwd=repo, state=state)
    doc = json.loads(gone.stdout)
    assert gone.returncode == 1 and doc["success"] is False and doc["data"] is None
    assert doc["error"].startswith(f"no context for {TASK}")
