"""`ctxd sessions` and `ctxd resume`: the catalog, session references, packages, errors."""

from __future__ import annotations

import calendar
import json
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import run_cli
from resume_story import IN_PROGRESS_TASK, SID, make_project, story

from ctxd_hook import hook
from indexer.index import store
from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up
from summarizer.resume.sessions import (
    AmbiguousSessionError,
    SessionNotFoundError,
    list_sessions,
    resolve_session,
    session_title,
    stamp_of,
)

A = "aaaa1111-0000-4000-8000-000000000001"
B = "aaaa2222-0000-4000-8000-000000000002"
C = "bbbb3333-0000-4000-8000-000000000003"
D = "cccc4444-0000-4000-8000-000000000004"


def _ns(stamp: str) -> int:
    return calendar.timegm(time.strptime(stamp, "%Y-%m-%d-%H-%M-%S")) * 1_000_000_000


def _write(state: Path, ts_ns: int, **fields: Any) -> None:
    payload = json.dumps({"cwd": "/home/dev/app", **fields}).encode()
    spool = state / "spool"
    spool.mkdir(parents=True, exist_ok=True, mode=0o700)
    hook.append_line(str(spool), hook.segment_name(ts_ns), hook.build_line(payload, ts_ns, 42))


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    """Four sessions; C and D start in the same second."""
    state = tmp_path / ".ctxd"
    t_a, t_b, t_c = (
        _ns("2025-03-01-09-00-00"),
        _ns("2025-03-02-10-30-00"),
        _ns("2025-03-03-08-15-42"),
    )
    _write(state, t_a, session_id=A, hook_event_name="SessionStart", source="startup")
    _write(
        state,
        t_a + 1000,
        session_id=A,
        hook_event_name="UserPromptSubmit",
        prompt="Fix the login bug\nwhere users are logged out after a refresh",
    )
    _write(
        state, t_a + 2000, session_id=A, hook_event_name="SessionEnd", reason="prompt_input_exit"
    )
    _write(
        state,
        t_b,
        session_id=B,
        hook_event_name="UserPromptSubmit",
        prompt="x" * 300,
        session_title="Billing refactor",
    )
    _write(state, t_b + 1, session_id=B, hook_event_name="PreCompact", trigger="auto")
    _write(state, t_c, session_id=C, hook_event_name="UserPromptSubmit", prompt="Add dark mode")
    _write(state, t_c + 5, session_id=D, hook_event_name="UserPromptSubmit", prompt="Other")
    catch_up(StatePaths(state))
    return state


def _conn(state: Path) -> Any:
    return store.connect(state / "index.db", readonly=True)


def test_stamp_and_title() -> None:
    assert stamp_of(_ns("2024-12-19-14-30-45") + 999_999_999) == "2024-12-19-14-30-45"
    assert session_title("", "  Fix it\nplease ") == "Fix it"
    assert session_title("Given", "prompt") == "Given"
    assert session_title("", "w " * 100).endswith("…") and len(session_title("", "w " * 100)) == 80


def test_list_newest_first_with_status_and_titles(catalog: Path) -> None:
    conn = _conn(catalog)
    try:
        infos = list_sessions(conn)
        assert [i.session_id for i in infos] == [D, C, B, A]
        by_id = {i.session_id: i for i in infos}
        assert by_id[A].title == "Fix the login bug"
        assert (by_id[A].status, by_id[A].end_reason) == ("ended", "prompt_input_exit")
        assert by_id[B].title == "Billing refactor" and by_id[B].status == "compacted"
        assert by_id[A].stamp == "2025-03-01-09-00-00" and by_id[A].events == 3
        assert [i.session_id for i in list_sessions(conn, 2)] == [D, C]
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        (A, A),
        (A.upper(), A),
        ("aaaa1", A),
        ("BBBB", C),
        ("2025-03-01-09-00-00", A),
        ("2025-03-02", B),
        ("2025-03-02-10-30", B),
    ],
)
def test_resolve(catalog: Path, ref: str, expected: str) -> None:
    conn = _conn(catalog)
    try:
        assert resolve_session(conn, ref).session_id == expected
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("ref", "error", "names"),
    [
        ("aaaa", AmbiguousSessionError, [A, B]),
        ("2025-03-03-08-15-42", AmbiguousSessionError, [C, D]),
        ("2025-03", AmbiguousSessionError, [A, B, C]),
        ("zzzz", SessionNotFoundError, []),
        ("2024-01-01-00-00-00", SessionNotFoundError, []),
        ("  ", SessionNotFoundError, []),
        ("%", SessionNotFoundError, []),
    ],
)
def test_resolve_errors_are_one_line_with_candidates(
    catalog: Path, ref: str, error: type[Exception], names: list[str]
) -> None:
    conn = _conn(catalog)
    try:
        with pytest.raises(error) as info:
            resolve_session(conn, ref)
    finally:
        conn.close()
    message = str(info.value)
    assert "\n" not in message
    for name in names:
        assert name in message


def test_cli_sessions_json_and_table(catalog: Path) -> None:
    done = run_cli("sessions", "--json", "--limit", "3", state_dir=catalog)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [r["session_id"] for r in rows] == [D, C, B]
    assert set(rows[0]) >= {
        "stamp",
        "title",
        "cwd",
        "last_activity",
        "events",
        "agents",
        "failures",
        "status",
        "end_reason",
    }
    table = run_cli("sessions", state_dir=catalog)
    assert "2025-03-01-09-00-00" in table.stdout and "ended (prompt_input_exit)" in table.stdout


def test_cli_sessions_empty_state(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir(mode=0o700)  # a state dir with nothing recorded yet
    done = run_cli("sessions", state_dir=tmp_path / "empty")
    assert done.returncode == 0 and "no sessions" in done.stdout
    missing = run_cli("sessions", state_dir=tmp_path / "none")  # no state dir at all
    assert missing.returncode == 1 and "no ctxd state in" in missing.stderr
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize("ref", ["aaaa", "nope", "2025-03-03-08-15-42"])
def test_cli_resume_errors(catalog: Path, ref: str) -> None:
    done = run_cli("resume", ref, state_dir=catalog)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("ctxd resume: error:")
    assert "Traceback" not in done.stderr


def test_cli_resume_corrupt_index(tmp_path: Path) -> None:
    state = tmp_path / ".ctxd"
    state.mkdir()
    (state / "index.db").write_bytes(b"this is not sqlite" * 100)
    done = run_cli("resume", "abc", state_dir=state)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "index" in done.stderr


def test_cli_resume_package_markdown_and_json(tmp_path: Path) -> None:
    project = make_project(tmp_path / "app")
    state = project / ".ctxd"
    env = {"CLAUDE_PROJECT_DIR": str(project)}
    for p in story(project):
        hook.run(json.dumps(p).encode(), env, str(project))
    done = run_cli("resume", SID[:6].upper(), state_dir=state)
    assert done.returncode == 0, done.stderr
    md = done.stdout
    assert md.startswith("# CSV export for reports")
    for part in (
        "## Open todos",
        IN_PROGRESS_TASK,
        "## Agents",
        "## Files",
        "## Last entries",
        str(project / "web/reports.html"),
    ):
        assert part in md
    pkg = json.loads(run_cli("resume", SID, "--json", state_dir=state).stdout)
    assert pkg["session"]["session_id"] == SID
    assert pkg["current_task"]["content"] == IN_PROGRESS_TASK
    assert {"summary", "open_todos", "open_failures", "agents", "files", "last_entries"} <= set(pkg)
    assert len(pkg["last_entries"]) == 15
    # catch-up without a daemon also wrote the session's todos.json and its PreCompact state
    assert (state / "sessions" / SID / "todos.json").exists()
    assert pkg["resume_state"]["trigger"] == "pre_compact"


def test_cli_resume_tolerates_corrupt_state_files(tmp_path: Path) -> None:
    project = make_project(tmp_path / "app")
    state = project / ".ctxd"
    for p in story(project):
        hook.run(json.dumps(p).encode(), {"CLAUDE_PROJECT_DIR": str(project)}, str(project))
    assert run_cli("sessions", state_dir=state).returncode == 0  # writes todos.json and state
    (state / "sessions" / SID / "todos.json").write_text("{broken")
    (state / "resume" / SID / "precompact_state.json").write_text("[1, 2")
    done = run_cli("resume", SID, "--json", state_dir=state)
    assert done.returncode == 0, done.stderr
    pkg = json.loads(done.stdout)
    assert pkg["current_task"]["content"] == IN_PROGRESS_TASK
    assert len(pkg["notes"]) == 2 and pkg["resume_state"] is None
