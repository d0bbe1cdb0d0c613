"""The recall table the daemon writes with each session's state: the project's unresolved
failures by their file or command, the rules and decisions in force that name a file; none
when `[resume] recall_on_action` is off."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import hook_env, run_cli, run_hook
from memory_helpers import PROJECT, SESSION, base, bash, prompt, replay

from indexer.config import Config, ResumeConfig
from indexer.index import store
from indexer.paths import StatePaths
from summarizer.memory.store import compact
from summarizer.resume import writer as resume


def _state(tmp_path: Path) -> StatePaths:
    return replay(tmp_path / "state", [
        prompt("Never rename the functions in src/billing_legacy.py."),
        *bash("python -m pytest -q tests/test_export.py", "toolu_b1",
              error="Exit code 1\nFAILED tests/test_export.py::test_header"),
        base("Stop", stop_hook_active=False, last_assistant_message=(
            "Kept src/export.py synchronous rather than async: exports finish in a second.")),
    ])  # fmt: skip


def _update(paths: StatePaths, config: Config) -> None:
    conn = store.connect(paths.index_db)
    try:
        compact(conn)
        resume.update_session(conn, paths, config, SESSION, "compaction")
    finally:
        conn.close()


def _edit(path: str) -> bytes:
    return json.dumps({
        "session_id": SESSION, "cwd": PROJECT, "hook_event_name": "PreToolUse",
        "tool_name": "Edit", "tool_use_id": "toolu_e",
        "tool_input": {"file_path": f"{PROJECT}/{path}", "old_string": "a", "new_string": "b"},
    }).encode()  # fmt: skip


def test_the_table_holds_what_names_a_file_or_a_command(tmp_path: Path) -> None:
    paths = _state(tmp_path)
    _update(paths, Config())
    table = paths.root / "recall" / f"{SESSION}.tsv"
    rows = [line.split("\t") for line in table.read_text().splitlines()]
    keyed = {(kind, key): text for _, kind, key, text in rows}
    assert keyed[("cmd", "pytest tests/test_export.py")].startswith(
        'Bash `python -m pytest -q tests/test_export.py` failed (exit 1) and printed: "FAILED'
    )
    assert ("file", "tests/test_export.py") in keyed  # the file the failed command ran
    assert keyed[("file", "src/billing_legacy.py")] == (
        "The user's rule in force: \"Never rename the functions in src/billing_legacy.py.\""
    )
    assert keyed[("file", "src/export.py")].startswith('A decision in force: "Kept src/export.py')
    assert table.stat().st_mode & 0o777 == 0o600
    # The hook hands the rule back before an edit of the file it names.
    done = run_hook(_edit("src/billing_legacy.py"), hook_env(paths.root))
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Never rename the functions in src/billing_legacy.py." in context


def test_off_there_is_no_table(tmp_path: Path) -> None:
    paths = _state(tmp_path)
    _update(paths, Config())
    assert (paths.root / "recall" / f"{SESSION}.tsv").exists()
    _update(paths, Config(resume=ResumeConfig(recall_on_action=False)))
    assert not (paths.root / "recall" / f"{SESSION}.tsv").exists()
    assert run_hook(_edit("src/billing_legacy.py"), hook_env(paths.root)).stdout == b""


def test_what_the_table_quotes_is_redacted_again(tmp_path: Path) -> None:
    """An index an earlier ctxd wrote holds, as typed, what a rule added since finds: the table
    is an output outside the spool, redacted at its boundary like every other."""
    paths = _state(tmp_path)
    _update(paths, Config())
    secret = "ghp_" + "Q8vN2kLm5pR7sT9wX1yZ3aB4cD6eF0gH2jK4"
    conn = store.connect(paths.index_db)
    try:
        with conn:
            conn.execute("UPDATE mem_constraints SET description = description || ?",
                         (f" Its token is {secret}.",))  # fmt: skip
            conn.execute("UPDATE mem_failures SET description = description || ?",
                         (f" (token {secret})",))  # fmt: skip
        resume.update_session(conn, paths, Config(), SESSION, "compaction")
    finally:
        conn.close()
    table = (paths.root / "recall" / f"{SESSION}.tsv").read_text()
    assert secret not in table
    assert "[REDACTED:github-token]" in table


def test_forget_takes_the_tables_with_it(tmp_path: Path) -> None:
    """The forgotten session's table and what it was shown go; the others' tables too (they
    hold the project's items, the forgotten session's among them), rebuilt at their next update;
    what the others were shown stays."""
    paths = _state(tmp_path)
    _update(paths, Config())
    other = "0bc9b80c-a8d8-49f7-b95f-11e70ba60c91"
    recall = paths.root / "recall"
    (recall / f"{other}.tsv").write_text("x1\tfile\tsrc/a.py\tA decision in force\n")
    (recall / f"{other}.shown").write_text("x0\n")
    (recall / f"{SESSION}.shown").write_text("x2\n")
    done = run_cli("forget", SESSION, state_dir=paths.root)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in recall.iterdir()) == [f"{other}.shown"]
