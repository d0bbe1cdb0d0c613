"""Resume state: confidence, files to load, budgets (I9), calm wording, refresh, the corpus."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from helpers import CORPUS as _CORPUS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from resume_story import IN_PROGRESS_TASK, SID, make_project, story

from ctxd_hook import hook
from indexer.config import Config, ResumeConfig
from indexer.index import store
from indexer.models import Entry
from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up
from summarizer.common.models import Constraint, Decision, Failure, Memory
from summarizer.common.tokens import get_counter
from summarizer.daemon.session_jobs import sync_sessions
from summarizer.resume import writer as resume
from summarizer.resume.context import render_context
from summarizer.resume.hook import claim_context
from summarizer.resume.todos import Todo
from summarizer.resume.writer import (
    ResumeState,
    SessionFacts,
    ToolCall,
    build_state,
    confidence_of,
    rank_files,
)

CORPUS = _CORPUS / "hooks"
ALARMS = ("MUST", "CRITICAL", "MANDATORY", "IMPORTANT", "NEVER", "!!!", "🚨", "⚠")


def call(tool: str, path: str = "", event: str = "tool_result", n: int = 0) -> Entry:
    return Entry(
        file_id=1,
        offset=n,
        line_no=n,
        ts_ns=n,
        pid=1,
        session_id="s",
        hook_event="",
        event=event,
        tool_name=tool,
        files=(path,) if path else (),
        cwd="/p",
    )


@pytest.mark.parametrize(
    ("calls", "agents", "expected"),
    [
        ([call("Edit", "/p/a.py"), call("Read", "/p/b.py")], [], "high"),
        ([call("Write", "/p/a.py")], [], "high"),
        ([call("Read", "/p/a.py"), call("Bash")], [], "medium"),
        ([call("Bash"), call("Grep")], [("a1", "Explore", "")], "medium"),
        ([call("Bash"), call("Edit", "/p/a.py", event="tool_failure")], [], "low"),
        ([], [], "low"),
    ],
)
def test_confidence(calls: list[Entry], agents: list[Any], expected: str) -> None:
    facts = SessionFacts("s", tool_calls=calls, running_agents=agents)
    level, method = confidence_of(facts)
    assert level == expected and method.startswith("index:")


def test_rank_files_edited_first_missing_kept_at_most_ten(tmp_path: Path) -> None:
    names = [f"f{i}.py" for i in range(14)]
    for name in names:
        (tmp_path / name).write_text("")
    events = [call("Read", str(tmp_path / "f0.py"))]  # newest first
    events += [call("Edit", str(tmp_path / n)) for n in names[1:4]]
    events += [call("Read", str(tmp_path / "gone.py")), call("Read", "rel/f13.py")]
    events += [call("Read", str(tmp_path / n)) for n in names[4:13]]
    events.append(call("Edit", str(tmp_path / "f0.py")))  # edited long ago: still "edited"
    ranked, edited = rank_files(events)
    assert ranked[:4] == [str(tmp_path / n) for n in ("f1.py", "f2.py", "f3.py", "f0.py")]
    assert edited == set(ranked[:4])
    # A file missing on disk keeps its place (the notes mark it instead of dropping it).
    assert len(ranked) == 10 and ranked[4] == str(tmp_path / "gone.py")
    assert rank_files([call("Read", "a.py")]) == (["/p/a.py"], set())


def _state(**kw: Any) -> ResumeState:
    base: dict[str, Any] = {
        "session_id": "s" * 36,
        "trigger": "pre_compact",
        "active_project": "app",
        "active_agent": "main",
        "confidence": "high",
        "detection_method": "index:recent_edits",
        "created_at": "2026-01-03T14:25:00.000Z",
    }
    base.update(kw)
    return ResumeState(**base)


text_st = st.text(st.characters(blacklist_categories=("Cs",)), max_size=3000)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    title=text_st,
    request=text_st,
    todos=st.lists(text_st, max_size=60),
    files=st.lists(st.text(min_size=1, max_size=300), max_size=10),
    summary=st.text(max_size=40000),
    max_tokens=st.integers(min_value=200, max_value=4000),
)
def test_context_fits_both_budgets(
    title: str, request: str, todos: list[str], files: list[str], summary: str, max_tokens: int
) -> None:
    state = _state(
        title=title,
        next_action=request,
        open_todos=[Todo(t or "x", "pending") for t in todos],
        current_task=Todo(todos[0] or "x", "in_progress") if todos else None,
        files_to_load=files,
        compact_summary=summary,
        last_tool_calls=[ToolCall("Edit", f, "2026-01-03T14:25:00.000Z") for f in files],
    )
    config = Config(resume=ResumeConfig(max_tokens=max_tokens))
    text, tokens, chars = render_context(state, summary[::-1], config)
    assert tokens == get_counter().count(text) <= max_tokens
    assert chars == len(text.encode("utf-16-le")) // 2 <= 10000
    assert text.startswith("ctxd notes for session")


def test_context_states_facts_calmly_with_memory() -> None:
    memory = Memory(
        decisions=[Decision("d1", "Stream rows with the csv module", score=2.0)],
        failures=[
            Failure(
                "f1",
                "pytest tests/test_export.py",
                tool="Bash",
                count=3,
                last_error="AssertionError: header",
                session_id="s" * 36,
                score=1.0,
            ),
            Failure("f2", "already fixed", resolved=True),
        ],
        constraints=[Constraint("c1", "Never touch src/billing_legacy.py")],
    )
    facts = SessionFacts(
        "s" * 36,
        title="CSV export",
        tool_calls=[call("Edit", "/p/x.py")],
        last_prompt="Wire the export button",
        compact_summary="Earlier work.",
        todos=[Todo("Write tests", "in_progress")],
    )
    state = build_state(facts, "pre_compact", "/home/dev/app", memory, 0, exists=lambda p: True)
    assert [f.description for f in state.open_failures] == ["pytest tests/test_export.py"]
    assert state.decisions == ["Stream rows with the csv module"]
    assert state.constraints == ["Never touch src/billing_legacy.py"]
    assert (state.active_project, state.confidence) == ("app", "high")
    text, _, _ = render_context(state, "", Config())
    for part in (
        "Task in progress: Write tests.",
        "Wire the export button",
        "/p/x.py",
        "(3 times)",
        "Decisions in force:\n- Stream rows",
        "The user's constraints in force:\n- Never touch",
    ):
        assert part in text
    assert "Earlier work." not in text  # Claude Code's own summary: in the conversation already
    # The user's own words may say "Never"; ctxd's framing adds no alarm words of its own.
    framing = text.replace("Never touch src/billing_legacy.py", "")
    assert not [a for a in ALARMS if a in framing]


@pytest.fixture
def indexed(tmp_path: Path) -> Iterator[tuple[StatePaths, Any]]:
    project = make_project(tmp_path / "app")
    env = {"CLAUDE_PROJECT_DIR": str(project)}
    for p in story(project):
        hook.run(json.dumps(p).encode(), env, str(project))
    paths = StatePaths(project / ".ctxd")
    catch_up(paths)
    conn = store.connect(paths.index_db)
    yield paths, conn
    conn.close()


def test_state_of_the_story_has_every_seed_003_field(indexed: tuple[StatePaths, Any]) -> None:
    paths, conn = indexed
    state = resume.update_session(conn, paths, Config(), SID, "pre_compact")
    doc = json.loads((paths.resume / SID / "precompact_state.json").read_bytes())
    for key in (
        "session_id",
        "trigger",
        "active_project",
        "active_agent",
        "confidence",
        "detection_method",
        "last_tool_calls",
        "files_to_load",
        "current_task",
        "open_todos",
        "open_failures",
        "next_action",
        "created_at",
    ):
        assert key in doc, key
    assert doc["active_project"] == "app" and doc["confidence"] == "high"
    assert doc["current_task"]["content"] == IN_PROGRESS_TASK
    assert doc["next_action"].startswith("Good. Next, wire the export button")
    assert "sk-ant" not in json.dumps(doc)  # redacted at ingest
    assert {"tool", "file", "timestamp"} <= set(doc["last_tool_calls"][0])
    assert all(os.path.isfile(f) for f in doc["files_to_load"]) and doc["files_to_load"]
    assert state.context_tokens <= 2000 and state.context_chars <= 10000
    assert (paths.resume / SID / "precompact_state.json").stat().st_mode & 0o777 == 0o600


def test_an_acknowledgement_is_noted_after_the_request(indexed: tuple[StatePaths, Any]) -> None:
    paths, conn = indexed
    for text in ("yes", "continue"):
        prompt = {"session_id": SID, "cwd": "/x", "hook_event_name": "UserPromptSubmit",
                  "prompt": text}  # fmt: skip
        hook.run(json.dumps(prompt).encode(), {"CTXD_HOME": str(paths.root)}, "/")
    conn.close()
    catch_up(paths)
    conn = store.connect(paths.index_db)
    try:
        state = resume.update_session(conn, paths, Config(), SID, "compaction")
        from summarizer.memory.store import compact

        compact(conn)
        (latest,) = conn.execute("SELECT prompt FROM mem_sessions WHERE session_id=?", (SID,))
    finally:
        conn.close()
    assert state.next_action.startswith("Good. Next, wire the export button")
    assert state.next_action.endswith('(then: "continue")')
    text = (paths.resume / SID / "context.md").read_text()
    assert "Most recent user request: Good. Next, wire the export button" in text
    assert "Most recent user request: continue" not in text
    assert latest[0].startswith("Good. Next,") and latest[0].endswith('(then: "continue")')


def test_compact_summary_stays_out_of_the_notes(indexed: tuple[StatePaths, Any]) -> None:
    paths, conn = indexed
    post = {
        "session_id": SID,
        "cwd": "/x",
        "hook_event_name": "PostCompact",
        "trigger": "auto",
        "compact_summary": "The user is adding CSV export; tests pass.",
    }
    hook.run(json.dumps(post).encode(), {"CTXD_HOME": str(paths.root)}, "/")
    conn.close()
    catch_up(paths)
    conn = store.connect(paths.index_db)
    try:
        state = resume.update_session(conn, paths, Config(), SID, "compaction")
    finally:
        conn.close()
    # Kept in the state (`ctxd resume` shows it), not repeated in the notes: the conversation
    # holds Claude Code's own summary already.
    assert state.compact_summary == "The user is adding CSV export; tests pass."
    assert "tests pass." not in (paths.resume / SID / "context.md").read_text()


def test_refresh_and_sync_never_rearm_a_consumed_context(indexed: tuple[StatePaths, Any]) -> None:
    paths, conn = indexed
    assert sync_sessions(conn, paths, Config(), 0) > 0  # PreCompact: the state is written
    folder = paths.resume / SID
    assert json.loads((folder / "precompact_state.json").read_bytes())["trigger"] == "pre_compact"
    assert claim_context(str(folder))  # the SessionStart hook consumes it
    assert not (folder / "context.md").exists()
    assert sync_sessions(conn, paths, Config(), 0) > 0  # watermark lost: replays the triggers
    assert resume.refresh_states(conn, paths, Config()) == 0
    # A writer that built from the same events (e.g. racing the claim) does not re-arm it.
    resume.update_session(conn, paths, Config(), SID, "compaction")
    assert not (folder / "context.md").exists()
    assert claim_context(str(folder)) == ""


def test_refresh_rewrites_sessions_with_new_events(indexed: tuple[StatePaths, Any]) -> None:
    paths, conn = indexed
    assert resume.refresh_states(conn, paths, Config()) == 1
    state = json.loads((paths.resume / SID / "precompact_state.json").read_bytes())
    assert state["trigger"] == "pre_compact"  # the session's newest event is the PreCompact
    assert resume.refresh_states(conn, paths, Config()) == 0


def _corpus_repos() -> list[Path]:
    return sorted(p for p in CORPUS.iterdir() if p.is_dir()) if CORPUS.is_dir() else []


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")
@pytest.mark.parametrize("repo", _corpus_repos(), ids=lambda p: p.name)
def test_corpus_sessions_with_precompact_fit_the_budget(repo: Path, tmp_path: Path) -> None:
    """Every recorded session with a PreCompact gets a state whose context is within budget."""
    paths = StatePaths(tmp_path / "state")
    env = {"CTXD_HOME": str(paths.root)}
    for path in sorted(repo.rglob("*.jsonl")):
        for raw in path.read_bytes().splitlines():
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            # PostToolUseFailure logs of one repo wrap the real payload in `raw_input`.
            wrapped = isinstance(record, dict) and isinstance(record.get("raw_input"), dict)
            hook.run(json.dumps(record["raw_input"]).encode() if wrapped else raw, env, "/")
    catch_up(paths)
    conn = store.connect(paths.index_db)
    try:
        sessions = [
            str(r[0])
            for r in conn.execute(
                "SELECT DISTINCT session_id FROM entries WHERE event='pre_compact'"
            )
        ]
        if not sessions:
            pytest.skip(f"{repo.name}: no PreCompact recorded")
        config = Config()
        counter = get_counter()
        for sid in sessions:
            state = resume.update_session(conn, paths, config, sid, "pre_compact")
            text = (paths.resume / sid / "context.md").read_text()
            assert counter.count(text) == state.context_tokens <= config.resume.max_tokens
            assert len(text.encode("utf-16-le")) // 2 <= 10000
            doc = msgspec.json.decode((paths.resume / sid / "precompact_state.json").read_bytes())
            assert doc["session_id"] == sid and doc["confidence"] in ("high", "medium", "low")
            assert not [a for a in ("MUST", "CRITICAL", "🚨") if a in text.split("\n", 1)[0]]
            assert_clean_notes(text)
    finally:
        conn.close()


def assert_clean_notes(text: str) -> None:
    """No ANSI or control bytes, no mangled characters, no line said twice."""
    assert not [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0]
    assert "\ufffd" not in text and "<summary>" not in text and "<analysis>" not in text
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    assert len(lines) == len(set(lines)), [ln for ln in lines if lines.count(ln) > 1]


def test_demo_session_notes_are_clean(indexed: tuple[StatePaths, Any]) -> None:
    paths, conn = indexed
    state = resume.update_session(conn, paths, Config(), SID, "pre_compact")
    text = (paths.resume / SID / "context.md").read_text()
    assert get_counter().count(text) == state.context_tokens <= Config().resume.max_tokens
    assert_clean_notes(text)
