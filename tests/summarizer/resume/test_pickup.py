"""The notes end with where to pick up: the last check and its fate, files to re-read, the task."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memory_helpers import PROJECT, SESSION, base, bash, edit, prompt, replay

from indexer.config import Config
from indexer.index import store
from summarizer.memory.store import compact
from summarizer.resume import writer as resume


def _todos(*items: tuple[str, str]) -> list[dict[str, Any]]:
    todos = [{"content": c, "status": s, "activeForm": c} for c, s in items]
    ti = {"todos": todos}
    return [
        base("PreToolUse", tool_name="TodoWrite", tool_input=ti, tool_use_id="toolu_t"),
        base("PostToolUse", tool_name="TodoWrite", tool_input=ti, tool_use_id="toolu_t",
             tool_response={"oldTodos": [], "newTodos": todos}),
    ]  # fmt: skip


def _notes(tmp_path: Path, events: list[dict[str, Any]]) -> str:
    project = Path(PROJECT)
    paths = replay(tmp_path / "state", [prompt("Make the export pass"), *events])
    conn = store.connect(paths.index_db)
    try:
        compact(conn)
        resume.update_session(conn, paths, Config(), SESSION, "pre_compact")
    finally:
        conn.close()
    assert str(project) == PROJECT
    return (paths.resume / SESSION / "context.md").read_text()


def test_the_notes_end_with_where_to_pick_up(tmp_path: Path) -> None:
    text = _notes(tmp_path, [
        *_todos(("Fix the header row", "completed"), ("Add the totals row", "pending")),
        edit("src/export.py", "header = ['id', 'total']", "toolu_e1"),
        *bash("python -m pytest -q tests/test_export.py", "toolu_b1",
              error="Exit code 1\nFAILED tests/test_export.py::test_totals"),
        *bash("git status", "toolu_b2"),  # not a check: the last check stays the test run
    ])  # fmt: skip
    block = text.rsplit("\n\n", 1)[1]
    lines = block.splitlines()
    assert lines[0] == "Where to pick up (suggestions from the record):"
    assert lines[1].startswith("- The last check was `python -m pytest -q tests/test_export.py`")
    assert lines[1].endswith(" UTC): it failed; running it again shows whether the fix holds.")
    # In the tests the project's files do not exist: nothing to re-read; the task is named.
    assert lines[2:] == ["- The next open task: Add the totals row."]
    # Advice, never orders: no imperative alarm words of ctxd's own.
    assert not [w for w in ("MUST", "NEVER", "IMPORTANT", "MANDATORY") if w in block]


def test_a_passing_check_and_the_files_to_re_read(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "src" / "a.py").write_text("x = 1\n")
    (project / "src" / "b.py").write_text("y = 2\n")
    events = [
        base("PostToolUse", tool_name="Edit", tool_use_id=f"toolu_e{i}", cwd=str(project),
             tool_input={"file_path": str(project / "src" / name), "old_string": "x",
                         "new_string": "z"}, tool_response={})
        for i, name in enumerate(("b.py", "a.py"))
    ]  # fmt: skip
    events += [
        {**e, "cwd": str(project)}
        for e in bash("npm run build 2>&1 | tail -5", "toolu_b1")
    ]
    paths = replay(tmp_path / "state", [prompt("build it"), *events], cwd=str(project))
    conn = store.connect(paths.index_db)
    try:
        compact(conn)
        resume.update_session(conn, paths, Config(), SESSION, "pre_compact")
    finally:
        conn.close()
    text = (paths.resume / SESSION / "context.md").read_text()
    block = text.rsplit("\n\n", 1)[1]
    assert "- The last check was `npm run build 2>&1 | tail -5` (" in block
    assert "it passed." in block
    assert "- Files to re-read first: src/a.py, src/b.py." in block
