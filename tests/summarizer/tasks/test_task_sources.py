"""Task sources: YAML/JSON task files, citations and line spans, normalization, the manifest,
role exports, QA and evidence records, rebuild, and Claude Code tasks (init and purge)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from helpers import CORPUS, hook_env, poll, run_hook
from task_helpers import STANDARD, ctxd, git, make_repo, task_env

from summarizer.tasks import service
from summarizer.tasks.canon import NORMALIZER, SERIALIZER, normalize_multiline, sha256_hex
from summarizer.tasks.errors import TaskValidationError
from summarizer.tasks.exports import read_manifest

TASK = "TASK-0824"


def test_normalize_multiline_follows_the_algorithm() -> None:
    text = "# comment\r\nFirst line\r\n\r\n   \nsecond " + "word " * 40 + "\r\n"
    out = normalize_multiline(text)
    assert "\r" not in out and "comment" not in out and out.endswith("\n")
    assert not out.endswith("\n\n")
    assert max(len(line) for line in out.splitlines()) <= 120
    assert out.startswith("First line second word")
    bullets = "- one\n- two\n\n# dropped\n"
    assert normalize_multiline(bullets) == "- one\n- two\n"
    assert normalize_multiline("a\n  b", preserve_formatting=True) == "a\n  b\n"
    assert normalize_multiline(out) == out  # idempotent


def test_citation_line_span_sha_and_requirement(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    env, _ = task_env(repo, tmp_path / "state")
    ctx = service.init_context(env, TASK, task_file=repo / "tasks" / "TASK-0824.task.yaml")
    [c] = ctx.immutable.standards_citations
    lines = STANDARD.split("\n")
    assert lines[4] == "## Evidence Requirements" and lines[8] == "More detail here."
    assert c.line_span == "L5-L9"
    assert c.content_sha == sha256_hex("\n".join(lines[4:9]).encode())[:16]
    assert c.section == "evidence-requirements" and c.file == "standards/global.md"
    assert c.requirement == "Every change ships with a test that fails without it."
    snap = ctx.immutable.task_snapshot
    assert snap.description == "Settings load on every visit; cache them.\n"  # comment dropped
    assert ctx.immutable.repo_paths == ("src/a.py", "src/b.py", "src/c.py")
    assert ctx.immutable.validation_baseline.commands == ("pytest -q",)
    assert ctx.git.task_file_sha == git(repo, "hash-object", "tasks/TASK-0824.task.yaml").strip()


def test_json_task_file_with_citations_mapped_from_config(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    task = {
        "title": "JSON task",
        "priority": "P0",
        "area": "backend",
        "description": "x " * 1200,  # over 2 KiB: stored, with a warning
        "scope": {"in": ["src/*.py"]},
        "standards": [
            {"file": "standards/global.md", "section": "Governance", "requirement": "Ours."}
        ],
    }
    path = repo / "task.json"
    path.write_text(json.dumps(task))
    citations = {
        "*": ["standards/global.md#evidence-requirements"],
        "backend:P0": ["standards/global.md#governance"],
        "mobile": ["standards/missing.md#nothing"],
    }
    env, warnings = task_env(repo, tmp_path / "state", citations=citations)
    ctx = service.init_context(env, TASK, task_file=path)
    found = {c.section: c.requirement for c in ctx.immutable.standards_citations}
    assert found == {
        "evidence-requirements": "Every change ships with a test that fails without it.",
        "governance": "Ours.",  # the task's own entry wins over the mapped one
    }
    assert ctx.immutable.repo_paths == ("src/a.py", "src/b.py", "src/c.py")  # glob expanded
    assert any("immutable.task_snapshot.description" in w and "over 2048" in w for w in warnings)


def test_quality_gates_refuse_an_incomplete_task(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    env, _ = task_env(repo, tmp_path / "state")
    (repo / "t1.yaml").write_text("title: T\ndescription: d\n")
    with pytest.raises(TaskValidationError, match="cites no standards"):
        service.init_context(env, TASK, task_file=repo / "t1.yaml")
    (repo / "t2.yaml").write_text("title: T\nstandards: ['standards/global.md#governance']\n")
    with pytest.raises(TaskValidationError, match="no description"):
        service.init_context(env, TASK, task_file=repo / "t2.yaml")
    (repo / "t3.yaml").write_text("title: T\ndescription: d\nstandards: ['../x.md#a']\n")
    with pytest.raises(TaskValidationError, match=r"without '\.\.'"):
        service.init_context(env, TASK, task_file=repo / "t3.yaml")
    (repo / "t4.yaml").write_text("title: [unclosed\n")
    with pytest.raises(TaskValidationError, match="not valid"):
        service.init_context(env, TASK, task_file=repo / "t4.yaml")
    assert service.list_tasks(env) == []  # nothing half-made


def test_manifest_and_role_exports(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    state = tmp_path / "state"
    env, _ = task_env(repo, state)
    service.init_context(env, TASK, task_file=repo / "tasks" / "TASK-0824.task.yaml")
    directory = state / "tasks" / TASK
    manifest = read_manifest(env.store, TASK)
    assert manifest.normalizer == NORMALIZER and manifest.serializer == SERIALIZER
    sources = {e.path: e.sha256 for e in manifest.sources}
    assert sources == {
        "standards/global.md": sha256_hex((repo / "standards/global.md").read_bytes()),
        "tasks/TASK-0824.task.yaml": sha256_hex((repo / "tasks/TASK-0824.task.yaml").read_bytes()),
    }
    derived = {e.path: e.sha256 for e in manifest.derived}
    for name in (
        "context.json",
        "context-implementer.json",
        "context-reviewer.json",
        "context-validator.json",
    ):
        assert derived[name] == sha256_hex((directory / name).read_bytes())
    # Canonical serialization: sorted keys, UTF-8, one trailing newline.
    raw = (directory / "context.json").read_text(encoding="utf-8")
    doc = json.loads(raw)
    assert raw == json.dumps(doc, sort_keys=True, ensure_ascii=False, indent=2) + "\n"
    reviewer = json.loads((directory / "context-reviewer.json").read_text())
    validator = json.loads((directory / "context-validator.json").read_text())
    assert "validation_baseline" not in reviewer and "validation_baseline" in validator
    assert "scope_out" not in validator["task_snapshot"]
    assert reviewer["role"] == "reviewer" and reviewer["previous_role"] == "implementer"
    assert reviewer["standards_citations"][0]["line_span"] == "L5-L9"


def test_record_qa_evidence_and_rebuild(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    env, _ = task_env(repo, tmp_path / "state")
    task_file = repo / "tasks" / "TASK-0824.task.yaml"
    service.init_context(env, TASK, task_file=task_file)
    log = tmp_path / "qa.log"
    log.write_text("lint ok\ntests: 12 passed\n")
    ctx = service.record_qa(env, TASK, "implementer", log)
    baseline = ctx.immutable.validation_baseline
    assert baseline.status == "recorded"
    [result] = baseline.initial_results
    assert result.summary == "tests: 12 passed" and result.log_sha == sha256_hex(log.read_bytes())
    stored = env.store.task_dir(TASK) / result.log_path
    assert gzip.decompress(stored.read_bytes()) == log.read_bytes()
    evidence = service.attach_evidence(env, TASK, "plan", "standards/global.md")
    assert evidence.id == sha256_hex((repo / "standards/global.md").read_bytes())[:16]
    # The task file changes: QA is refused until the context is rebuilt from it.
    task_file.write_text(task_file.read_text().replace("Cache the settings", "Cache settings v2"))
    standard = repo / "standards" / "global.md"
    standard.write_text(standard.read_text().replace("fails without it", "fails before the fix"))
    warnings: list[str] = []
    env.warn = warnings.append
    service.get_context(env, TASK)
    assert [w.split(" ")[0] for w in warnings] == [
        "standards/global.md#evidence-requirements",
        str(task_file),
    ]
    assert all(w.endswith(f"run `ctxd task rebuild {TASK}`") for w in warnings)
    with pytest.raises(TaskValidationError, match="changed since the context was built"):
        service.record_qa(env, TASK, "implementer", log)
    rebuilt = service.rebuild(env, TASK)
    assert rebuilt.immutable.task_snapshot.title == "Cache settings v2"
    assert rebuilt.immutable.validation_baseline.initial_results == baseline.initial_results
    assert any(e.action == "rebuild" for e in rebuilt.audit.events)
    service.record_qa(env, TASK, "validator", log)


def _corpus_task_create() -> bytes:
    path = CORPUS / "hooks" / "SantiagoCoronado__pragma-web-design-test" / "post_tool_use.jsonl"
    if not path.is_file():
        pytest.skip(f"real-payload corpus not found at {CORPUS}")
    for line in path.read_bytes().splitlines():
        if b'"tool_name":"TaskCreate"' in line:
            return line
    raise AssertionError("no TaskCreate in the corpus file")


def test_from_claude_task_and_purge_on_task_completed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    state = tmp_path / "state"
    line = _corpus_task_create()
    event = json.loads(line)
    session, task_no = event["session_id"], event["tool_response"]["task"]["id"]
    assert run_hook(line, hook_env(state)).returncode == 0
    (state / "config.toml").write_text(
        '[tasks]\ncitations = { "*" = ["standards/global.md#governance"] }\n'
    )
    out = ctxd(
        "task",
        "init",
        "CC-1",
        "--from-claude-task",
        task_no,
        "--format",
        "json",
        cwd=repo,
        state=state,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)["data"]
    assert data["immutable"]["task_snapshot"]["title"] == event["tool_input"]["subject"]
    assert data["immutable"]["task_snapshot"]["description"].startswith("Add raw_content")
    assert data["linked_claude_task"] == task_no and data["linked_claude_session"] == session
    ctxd("task", "init", "OTHER", "--task-file", "tasks/TASK-0824.task.yaml", cwd=repo, state=state)
    linked = ctxd(
        "task",
        "init",
        "LINKED",
        "--task-file",
        "tasks/TASK-0824.task.yaml",
        "--link-claude-task",
        task_no,
        cwd=repo,
        state=state,
    )
    assert linked.returncode == 0, linked.stderr
    # Claude Code reports the task completed: the next task command (no daemon) purges it.
    done = {
        "session_id": session,
        "hook_event_name": "TaskCompleted",
        "task_id": task_no,
        "task_subject": event["tool_input"]["subject"],
    }
    assert run_hook(json.dumps(done).encode(), hook_env(state)).returncode == 0
    listed = ctxd("task", "list", "--format", "json", cwd=repo, state=state)
    assert [t["task_id"] for t in json.loads(listed.stdout)["data"]] == ["OTHER"]
    assert "purged CC-1" in listed.stderr and "purged LINKED" in listed.stderr
    assert not (state / "tasks" / "CC-1").exists()
    missing = ctxd("task", "init", "CC-2", "--from-claude-task", "999", cwd=repo, state=state)
    assert missing.returncode == 1 and "no Claude Code task '999'" in missing.stderr


def test_the_daemon_purges_on_task_completed(tmp_path: Path) -> None:
    from test_daemon import start_daemon, stop, wait_started

    repo = make_repo(tmp_path)
    state = tmp_path / "state"
    line = _corpus_task_create()
    event = json.loads(line)
    run_hook(line, hook_env(state))
    (state / "config.toml").write_text(
        "[daemon]\nrescan_interval_s = 0.2\n"
        '[tasks]\ncitations = { "*" = ["standards/global.md#governance"] }\n'
    )
    task_no = event["tool_response"]["task"]["id"]
    out = ctxd("task", "init", "CC-1", "--from-claude-task", task_no, cwd=repo, state=state)
    assert out.returncode == 0, out.stderr
    d = start_daemon(state, tmp_path)
    try:
        wait_started(d)
        done = {
            "session_id": event["session_id"],
            "hook_event_name": "TaskCompleted",
            "task_id": task_no,
            "task_subject": "x",
        }
        run_hook(json.dumps(done).encode(), hook_env(state))
        poll(lambda: not (state / "tasks" / "CC-1").exists(), timeout=60)
    finally:
        stop(d)
    assert list((state / "tasks").glob("*/context.json")) == []


def test_roles_are_configurable_and_checked(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    task_file = repo / "tasks" / "TASK-0824.task.yaml"
    env, _ = task_env(repo, tmp_path / "s1", roles=["planner", "implementer"])
    ctx = service.init_context(env, TASK, task_file=task_file)
    assert ctx.roles == ("planner", "implementer")
    assert sorted(p.name for p in env.store.task_dir(TASK).glob("context-*.json")) == [
        "context-implementer.json",
        "context-planner.json",
    ]
    for bad in (["../x"], ["Implementer"], ["a", "a"]):
        env, _ = task_env(repo, tmp_path / "s2", roles=bad)
        with pytest.raises(TaskValidationError, match="cannot be a role"):
            service.init_context(env, TASK, task_file=task_file)
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "s2" / "tasks" / TASK).exists()
