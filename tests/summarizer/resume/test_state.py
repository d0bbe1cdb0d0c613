"""summarizer/resume/state.py: a session's facts from the index and the resume state built on them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memory_helpers import PROJECT, SESSION, bash, edit, entry, prompt, replay

from indexer.index import store
from indexer.models import Entry
from summarizer.resume.facts import SessionFacts, gather_facts
from summarizer.resume.state import (
    build_state,
    confidence_of,
    open_failures_of,
    rank_files,
)

NOW_NS = 1_764_072_000_000_000_000  # 2025-11-25T12:00:00Z


def call(event: str, tool: str, n: int, **kw: Any) -> Entry:
    return entry(event, n, tool_name=tool, ts_ns=NOW_NS + n * 10**9, **kw)


def bash_call(event: str, command: str, n: int, error: str = "") -> Entry:
    return call(event, "Bash", n, description="run", error=error,
                detail={"input": {"command": command}})  # fmt: skip


def test_confidence_levels() -> None:
    facts = SessionFacts("s", tool_calls=[call("tool_result", "Edit", 2),
                                          call("tool_result", "Read", 1)])  # fmt: skip
    assert confidence_of(facts) == ("high", "index:recent_edits")
    facts = SessionFacts("s", tool_calls=[call("tool_result", "Read", 1),
                                          call("tool_use", "Edit", 2)])  # fmt: skip
    assert confidence_of(facts) == ("medium", "index:recent_reads")
    facts = SessionFacts("s", running_agents=[("ag1", "Explore", "look")])
    assert confidence_of(facts) == ("medium", "index:agent_in_flight")
    facts = SessionFacts("s", tool_calls=[call("tool_result", "Bash", 1)])
    assert confidence_of(facts) == ("low", "index:no_recent_file_activity")


def test_rank_files_puts_edits_first_and_resolves_relative_paths() -> None:
    events = [  # newest first, as gather_facts reads them
        call("tool_result", "Read", 6, files=("/p/notes.md",)),
        call("tool_result", "Edit", 5, files=("/p/b.py",)),
        call("tool_result", "Read", 4, files=("/p/b.py",)),
        call("tool_use", "Write", 3, files=("rel/c.py",), cwd="/p"),
        call("tool_result", "Edit", 2, files=("/p/a.py",)),
        call("tool_result", "Read", 1, files=("/p/z.md",)),
    ]
    ranked, edited = rank_files(events)
    assert ranked == ["/p/b.py", "/p/rel/c.py", "/p/a.py", "/p/notes.md", "/p/z.md"]
    assert edited == {"/p/b.py", "/p/rel/c.py", "/p/a.py"}
    assert rank_files(events, limit=2) == (["/p/b.py", "/p/rel/c.py"], {"/p/b.py", "/p/rel/c.py"})


def test_a_failure_fixed_later_is_not_open() -> None:
    facts = SessionFacts("s", failures=[  # newest first
        bash_call("tool_result", "make test", 3),
        bash_call("tool_failure", "make test", 2, error="Exit code 2\nE   AssertionError"),
        bash_call("tool_failure", "make lint", 1, error="Exit code 1\nruff: error E501"),
    ])  # fmt: skip
    notes = open_failures_of(facts, None)
    assert [(n.description, n.tool, n.count, n.resolved) for n in notes] == [
        ('Bash `make lint` failed (exit 1) and printed: "ruff: error E501"', "Bash", 1, False),
        ('Bash `make test` failed (exit 2) and printed: "E AssertionError"', "Bash", 1, True),
    ]
    assert notes[0].last_error == "exit 1: ruff: error E501"
    assert notes[1].prevention == "`make test` passed later"


def test_repeats_are_counted_and_cascades_skipped() -> None:
    facts = SessionFacts("s", failures=[
        bash_call("tool_failure", "pytest", 4, error="Exit code 1\nFAILED test_x"),
        bash_call("tool_failure", "ls", 3, error="Sibling tool call errored"),
        bash_call("tool_failure", "pytest", 2, error="Exit code 1\nFAILED test_x"),
        bash_call("tool_failure", "git push", 1, error="Interrupted by user"),
    ])  # fmt: skip
    notes = open_failures_of(facts, None)
    assert [(n.description, n.count, n.last_error, n.cascades) for n in notes] == [
        ('Bash `pytest` failed (exit 1) and printed: "FAILED test_x"', 2, "exit 1: FAILED test_x", 1)
    ]


def test_build_state_from_facts() -> None:
    facts = SessionFacts(
        SESSION,
        title="Add CSV export",
        first_ns=NOW_NS,
        tool_calls=[
            call("tool_result", "TodoWrite", 5),  # bookkeeping: not listed
            bash_call("tool_failure", "make", 4, error="Exit code 2\nerror: boom"),
            call("tool_result", "Edit", 3, files=("/p/a.py",)),
        ],
        file_events=[
            call("tool_result", "Edit", 3, files=("/p/a.py",)),
            call("tool_result", "Read", 2, files=("/p/gone.md",)),
        ],
        last_prompt="  Now add the tests\n",
        compact_summary="<summary>We built the exporter.</summary>",
        running_agents=[("ag7", "Explore", "find callers")],
        watermark=5,
        covers_ns=NOW_NS + 5 * 10**9,
    )
    state = build_state(facts, "pre_compact", "/home/dev/shop/", None, NOW_NS,
                        exists=lambda p: p != "/p/gone.md")  # fmt: skip
    assert (state.session_id, state.trigger, state.active_project) == (
        SESSION,
        "pre_compact",
        "shop",
    )
    assert (state.confidence, state.detection_method) == ("high", "index:recent_edits")
    assert state.created_at == "2025-11-25T12:00:00.000Z"
    assert state.started_at == "2025-11-25T12:00:00.000Z"
    assert state.active_agent == "ag7"
    assert state.agents_in_flight == ["ag7 (Explore): find callers"]
    assert [(c.tool, c.file, c.ok) for c in state.last_tool_calls] == [
        ("Bash", "make", False),
        ("Edit", "/p/a.py", True),
    ]
    assert state.last_tool_calls[1].timestamp == "2025-11-25T12:00:03.000Z"
    assert state.files_to_load == ["/p/a.py", "/p/gone.md"]
    assert state.edited_files == ["/p/a.py"]
    assert state.missing_files == ["/p/gone.md"]
    assert state.next_action == "Now add the tests"
    assert state.compact_summary == "We built the exporter."
    assert (state.watermark, state.covers_ns) == (5, NOW_NS + 5 * 10**9)
    assert state.decisions == [] and state.constraints == []


def test_gather_facts_reads_one_session_from_a_real_index(tmp_path: Path) -> None:
    other = "9a9a9a9a-0000-4000-8000-000000000001"
    paths = replay(
        tmp_path / "state",
        [
            prompt("Add a CSV export to the orders page"),
            edit("src/export.py", "def export(): ...", "t1"),
            *bash("pytest -q", "t2", error="Exit code 1\nFAILED tests/test_export.py"),
            prompt("continue"),
            prompt("Something else entirely", session=other),
        ],
    )
    conn = store.connect(paths.index_db, readonly=True)
    try:
        facts = gather_facts(conn, SESSION)
        max_id = store.max_entry_id(conn)
    finally:
        conn.close()
    assert facts.title == "Add a CSV export to the orders page"
    assert facts.cwd == PROJECT
    # "continue" is no request of its own: the request is the prompt before it.
    assert facts.last_prompt == 'Add a CSV export to the orders page (then: "continue")'
    assert [e.tool_name for e in facts.file_events] == ["Edit"]
    assert facts.file_events[0].files == (f"{PROJECT}/src/export.py",)
    assert [e.event for e in facts.tool_calls] == ["tool_failure", "tool_result"]
    assert facts.watermark == max_id - 1  # the other session's prompt is the last entry
    assert facts.last_event == "prompt"
    assert facts.covers_ns > 0
    assert confidence_of(facts) == ("high", "index:recent_edits")
    notes = open_failures_of(facts, None)
    assert [(n.description, n.tool) for n in notes] == [
        ('Bash `pytest -q` failed (exit 1) and printed: "FAILED tests/test_export.py"', "Bash")
    ]
    conn = store.connect(paths.index_db, readonly=True)
    try:
        assert gather_facts(conn, "nobody") == SessionFacts("nobody")
    finally:
        conn.close()
