"""Failures that know their fate: resolved by a later call on the same target, cascades folded,
one line each in the notes (the tool once, the error once), every unresolved one listed."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from memory_helpers import PROJECT, SESSION, base, bash, edit, prompt, replay

from indexer.config import Config
from indexer.index import store
from indexer.paths import StatePaths
from summarizer.memory.reader import load_memory
from summarizer.memory.store import compact
from summarizer.resume import writer as resume

_n = iter(range(10**6))


def _failure(tool: str, tool_input: dict[str, Any], error: str) -> list[dict[str, Any]]:
    tid = f"toolu_f{next(_n)}"
    return [
        base("PreToolUse", tool_name=tool, tool_input=tool_input, tool_use_id=tid),
        base("PostToolUseFailure", tool_name=tool, tool_input=tool_input, tool_use_id=tid,
             error=error),
    ]  # fmt: skip


def _ok(tool: str, tool_input: dict[str, Any]) -> list[dict[str, Any]]:
    tid = f"toolu_s{next(_n)}"
    return [
        base("PreToolUse", tool_name=tool, tool_input=tool_input, tool_use_id=tid),
        base("PostToolUse", tool_name=tool, tool_input=tool_input, tool_use_id=tid,
             tool_response={"ok": True}),
    ]  # fmt: skip


def _bash(command: str, error: str | None = None) -> list[dict[str, Any]]:
    return bash(command, f"toolu_b{next(_n)}", error=error)


def _read(path: str) -> dict[str, Any]:
    return {"file_path": f"{PROJECT}/{path}"}


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Any]:
    """Replays events, compacts, and returns (rows by description prefix, the notes text)."""

    def run(events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
        paths = replay(tmp_path / "state", [prompt("Fix the build"), *events])
        conn = store.connect(paths.index_db)
        try:
            compact(conn)
            conn.row_factory = sqlite3.Row
            rows = [dict(r) for r in conn.execute("SELECT * FROM mem_failures ORDER BY entry_id")]
            conn.row_factory = None
            resume.update_session(conn, StatePaths(paths.root), Config(), SESSION, "pre_compact")
        finally:
            conn.close()
        return rows, (paths.resume / SESSION / "context.md").read_text()

    yield run


def _failures_block(text: str) -> list[str]:
    block = text.split("Failures, unresolved first:\n", 1)[1].split("\n\n", 1)[0]
    return block.splitlines()


def test_a_later_run_of_the_same_command_head_resolves_and_says_what_passed(session: Any) -> None:
    rows, text = session([
        *_bash("npm run build", error="Exit code 1\nsrc/a.ts:3:5: error TS2304: Cannot find x"),
        edit("src/a.ts", "import { x } from './x'", "toolu_e1"),
        *_bash("npm run build 2>&1 | tail -20"),
    ])  # fmt: skip
    (row,) = rows
    assert row["resolved_entry_id"] > 0 and row["target_key"] == "bash:npm run build"
    assert row["prevention"] == (
        "After editing src/a.ts (import { x } from './x') `npm run build 2>&1 | tail -20` passed"
    )
    (line,) = _failures_block(text)
    assert line == (
        '- Bash `npm run build` failed (exit 1) and printed: "src/a.ts:3:5: error TS2304: Cannot'
        " find x\"; resolved: After editing src/a.ts (import { x } from './x') `npm run build"
        ' 2>&1 | tail -20` passed'
    )


def test_a_full_test_run_resolves_a_failed_test_node(session: Any) -> None:
    rows, _ = session([
        *_bash("python -m pytest -q tests/test_export.py::test_header",
               error="Exit code 1\nFAILED tests/test_export.py::test_header"),
        *_bash("pytest -q"),
    ])  # fmt: skip
    (row,) = rows
    assert row["target_key"] == "bash:pytest tests/test_export.py::test_header"
    assert row["resolved_entry_id"] > 0


def test_a_file_tool_failure_is_resolved_by_the_same_kind_of_call_on_the_file(
    session: Any,
) -> None:
    target = {"file_path": f"{PROJECT}/src/a.py", "old_string": "a", "new_string": "b"}
    rows, text = session([
        *_failure("Edit", target, "File has not been read yet. Read it first before writing to it."),
        *_ok("Read", _read("src/a.py")),  # another kind of call: not the fix itself
        *_ok("Edit", target),
        *_failure("Read", _read("secrets/.env"), "File is in a directory that is denied."),
    ])  # fmt: skip
    edit_row, read_row = rows
    assert edit_row["resolved_entry_id"] > 0
    assert edit_row["prevention"] == "A later Edit call on it succeeded"
    assert read_row["resolved_entry_id"] == 0
    lines = _failures_block(text)
    assert lines[0] == (
        '- Read `secrets/.env` failed and said: "File is in a directory that is denied."'
    )  # unresolved first
    assert lines[1].endswith("; resolved: A later Edit call on it succeeded")


def test_cascades_are_folded_into_the_failure_that_caused_them(session: Any) -> None:
    rows, text = session([
        *_bash("npm test", error="Exit code 1\nFAIL src/a.test.ts"),
        *_failure("Read", _read("src/b.ts"), "Sibling tool call errored"),
        *_failure("Edit", _read("src/c.ts"), "Sibling tool call errored"),
        *_failure("Bash", {"command": "git push"}, "User rejected tool use"),
        *_failure("Bash", {"command": "sleep 60"}, "[Request interrupted by user for tool use]"),
    ])  # fmt: skip
    (row,) = rows  # no failure of their own for the cancelled, rejected and interrupted calls
    assert row["cascades"] == 2
    (line,) = _failures_block(text)
    assert line == (
        '- Bash `npm test` failed (exit 1) and printed: "FAIL src/a.test.ts" (2 parallel calls'
        " cancelled with it)"
    )


def test_each_line_names_the_tool_once_and_the_error_once(session: Any) -> None:
    _, text = session([
        *_failure("Read", _read("docs/x.md"), "EISDIR: illegal operation on a directory, read"),
        *_failure("Read", _read("docs/x.md"), "EISDIR: illegal operation on a directory, read"),
    ])  # fmt: skip
    (line,) = _failures_block(text)
    assert line == (
        '- Read `docs/x.md` failed and said: "EISDIR: illegal operation on a directory, read"'
        " (2 times)"
    )
    assert line.count("Read") == 1 and line.count("EISDIR") == 1 and line.count("failed") == 1


def test_every_distinct_unresolved_failure_is_in_the_notes_within_the_budget(
    session: Any,
) -> None:
    events = []
    words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike nov"
    for i, word in enumerate(words.split()):
        events += _bash(f"make target{i}", error=f"Exit code 2\nmake: {word} is missing")
    for name in ("a", "b", "c", "d"):
        events += _failure("Bash", {"command": f"cat .env.{name}"}, "Permission denied by a hook")
    rows, text = session(events)
    assert len(rows) == 18 and all(r["resolved_entry_id"] == 0 for r in rows)
    lines = _failures_block(text)
    for i in range(14):
        assert any(f"`make target{i}`" in line for line in lines), i
    # Calls with one error (masked: numbers and paths aside) are one line naming each of them.
    assert len(lines) == 15
    (grouped,) = [line for line in lines if "Permission denied" in line]
    assert grouped.startswith('- 4 calls failed with the same error, "Permission denied by a hook"')
    for name in ("a", "b", "c", "d"):
        assert f"`cat .env.{name}`" in grouped
    from summarizer.common.tokens import get_counter

    assert get_counter(Config().summarizer.encoding).count(text) <= Config().resume.max_tokens


def test_the_injection_lists_unresolved_failures_first(tmp_path: Path) -> None:
    paths = replay(tmp_path / "state", [
        *_bash("make b", error="Exit code 1\nboom b"),
        *_bash("make a", error="Exit code 1\nboom a"),
        *_bash("make a", error="Exit code 1\nboom a"),
        *_bash("make a"),  # the newest and most repeated failure, but resolved
    ])  # fmt: skip
    conn = store.connect(paths.index_db)
    try:
        compact(conn)
        mem = load_memory(conn)
    finally:
        conn.close()
    from summarizer.common.tokens import get_counter
    from summarizer.memory.injection import build_injection

    cfg = Config().summarizer
    inj = build_injection("", mem, feature_id=None, budget=2000, cfg=cfg,
                          counter=get_counter(cfg.encoding))  # fmt: skip
    assert [f["description"].split("`")[1] for f in inj["failures"]] == ["make b", "make a"]


def test_a_memory_written_by_an_earlier_ctxd_is_read_then_migrated(tmp_path: Path) -> None:
    from summarizer.memory.tables import SCHEMA

    paths = replay(tmp_path / "state", _bash("make a", error="Exit code 1\nboom"))
    old_schema = SCHEMA.replace(
        ",\n    target_key TEXT NOT NULL DEFAULT '', cascades INTEGER NOT NULL DEFAULT 0", ""
    )
    assert old_schema != SCHEMA
    conn = store.connect(paths.index_db)
    try:
        for statement in old_schema.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(
            "INSERT INTO mem_failures VALUES ('sig', 'Bash\x1fmake a', 'Bash `make a` failed', '',"
            " 0, 'Bash', 'make a', 'exit 1: boom', 'boom', '', 'tool', ?, 'main', 1, 1, 1, 1, 1,"
            " 0, 0, 0.0)",
            (SESSION,),
        )
        conn.commit()
    finally:
        conn.close()
    reader = store.connect(paths.index_db, readonly=True)
    try:  # a reader before any writer migrated it: the new columns read as their defaults
        (f,) = load_memory(reader).failures
        assert (f.description, f.cascades, f.target) == ("Bash `make a` failed", 0, "")
    finally:
        reader.close()
    conn = store.connect(paths.index_db)
    try:
        compact(conn)
        cols = {r[1] for r in conn.execute("PRAGMA table_info(mem_failures)")}
        assert {"target_key", "cascades"} <= cols
        assert len(load_memory(conn).failures) == 2  # the old row and the one just folded
    finally:
        conn.close()
