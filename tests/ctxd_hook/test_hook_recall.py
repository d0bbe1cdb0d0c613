"""Recall at the moment of action, through the real hook: PreToolUse of an edit or a command
prints what the session's table holds about it, at most 3 lines, each once per session;
PostToolUseFailure adds the failed call to the table. No table, no match: nothing printed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers import hook_env, run_hook

from ctxd_hook.recall import HEAD, MAX_LINES, row_id

SID = "5e1d0c2a-7f3b-4a9e-8c6d-1b2a3c4d5e6f"
PROJECT = "/home/dev/shop"


def _payload(event: str, tool: str, session: str = SID, **fields: Any) -> bytes:
    return json.dumps({
        "session_id": session, "transcript_path": f"/x/{session}.jsonl", "cwd": PROJECT,
        "permission_mode": "default", "hook_event_name": event, "tool_name": tool,
        "tool_use_id": "toolu_01Recall", **fields,
    }).encode()  # fmt: skip


def _edit(path: str, session: str = SID) -> bytes:
    ti = {"file_path": f"{PROJECT}/{path}", "old_string": "a", "new_string": "b"}
    return _payload("PreToolUse", "Edit", session, tool_input=ti)


def _bash(command: str, event: str = "PreToolUse", **fields: Any) -> bytes:
    ti = {"command": command, "description": "run"}
    return _payload(event, "Bash", tool_input=ti, **fields)


def _recall(state: Path, payload: bytes) -> list[str]:
    """The lines the hook handed back ([] for no output); it always exits 0."""
    done = run_hook(payload, hook_env(state))
    assert done.returncode == 0, done.stderr
    if not done.stdout:
        return []
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse"
    head, *lines = out["additionalContext"].split("\n")
    assert head == HEAD
    return lines


@pytest.fixture
def state(tmp_path: Path) -> Path:
    root = tmp_path / "state"
    (root / "recall").mkdir(parents=True, mode=0o700)
    root.chmod(0o700)
    rows = [
        (row_id("failure", "file", "src/a.py"), "file", "src/a.py", "Edit `src/a.py` failed"),
        (row_id("rule", "r1"), "file", "src/a.py", 'The user\'s rule in force: "Never rename a"'),
        (row_id("decision", "d1"), "file", "src/a.py", 'A decision in force: "Keep a sync"'),
        (row_id("decision", "d2"), "file", "src/a.py", 'A decision in force: "Log to stderr"'),
        (row_id("failure", "cmd", "npm run build"), "cmd", "npm run build",
         "Bash `npm run build` failed (exit 1)"),
    ]  # fmt: skip
    (root / "recall" / f"{SID}.tsv").write_text("".join("\t".join(r) + "\n" for r in rows))
    return root


def test_an_edit_of_a_file_with_history_gets_it_once(state: Path) -> None:
    first = _recall(state, _edit("src/a.py"))
    assert first == [
        "- Edit `src/a.py` failed",
        '- The user\'s rule in force: "Never rename a"',
        '- A decision in force: "Keep a sync"',
    ]  # at most MAX_LINES, in the table's order
    assert len(first) == MAX_LINES
    assert _recall(state, _edit("src/a.py")) == ['- A decision in force: "Log to stderr"']
    assert _recall(state, _edit("src/a.py")) == []  # never the same item twice in a session
    # Another session is shown them again: what a session was shown is its own.
    other = "0bc9b80c-a8d8-49f7-b95f-11e70ba60c91"
    (state / "recall" / f"{other}.tsv").write_bytes((state / "recall" / f"{SID}.tsv").read_bytes())
    assert len(_recall(state, _edit("src/a.py", other))) == MAX_LINES


def test_nothing_for_a_file_or_command_without_history(state: Path) -> None:
    assert _recall(state, _edit("src/b.py")) == []
    assert _recall(state, _bash("npm run test")) == []
    assert _recall(state, _edit("src/a.py", "6f8e2a1b-0000-4000-8000-000000000000")) == []  # no table
    assert not (state / "recall" / f"{SID}.shown").exists()


def test_a_command_matches_by_its_words_in_order(state: Path) -> None:
    assert _recall(state, _bash(f"cd {PROJECT} && npm run build 2>&1 | tail -20")) == [
        "- Bash `npm run build` failed (exit 1)"
    ]
    assert _recall(state, _bash("npm run build")) == []


def test_a_failed_call_is_recalled_before_the_next_one_on_its_target(tmp_path: Path) -> None:
    state = tmp_path / "state"
    failure = _bash("python3 -m pytest -q tests/test_export.py::test_header",
                    event="PostToolUseFailure",
                    error="Exit code 1\nFAILED tests/test_export.py::test_header - assert 1 == 2")
    assert run_hook(failure, hook_env(state)).returncode == 0
    assert os.stat(state / "recall" / f"{SID}.tsv").st_mode & 0o777 == 0o600
    (line,) = _recall(state, _edit("tests/test_export.py"))  # the file the command ran
    assert line == "- A Bash command that ran this file failed earlier in this session (exit 1)."
    # One item: recalled before the edit, not again before the test's next run.
    assert _recall(state, _bash("pytest tests/test_export.py::test_header")) == []
    other = tmp_path / "other"
    assert run_hook(failure, hook_env(other)).returncode == 0
    assert _recall(other, _bash("cd /x && pytest tests/test_export.py::test_header | tail")) == [
        "- This Bash command failed earlier in this session (exit 1)."
    ]
    edit = _payload("PostToolUseFailure", "Edit", tool_input={"file_path": f"{PROJECT}/src/b.py"},
                    error="String to replace not found in file.")
    assert run_hook(edit, hook_env(other)).returncode == 0
    assert _recall(other, _edit("src/b.py")) == [
        "- An Edit of this file failed earlier in this session."
    ]


def test_the_hook_keeps_nothing_of_the_failed_call_but_its_exit_code(tmp_path: Path) -> None:
    """The hook cannot redact (no rules in a hook process): the table outside the spool holds
    no word of the payload, only fingerprints of the file or command to match the next call."""
    state = tmp_path / "state"
    secret = "ghp_" + "Q8vN2kLm5pR7sT9wX1yZ3aB4cD6eF0gH2jK4"
    failure = _bash(f"curl -H 'Authorization: token {secret}' https://api.example.com/repos/x",
                    event="PostToolUseFailure",
                    error=f"Exit code 22\ncurl: (22) 401 for token {secret} at /srv/privy-path")
    assert run_hook(failure, hook_env(state)).returncode == 0
    edit = _payload("PostToolUseFailure", "Write", error="EACCES: permission denied",
                    tool_input={"file_path": f"/srv/{secret}/privy-notes.md", "content": "x"})
    assert run_hook(edit, hook_env(state)).returncode == 0
    kept = b"".join(p.read_bytes() for p in (state / "recall").iterdir())
    for word in (secret, "curl", "api.example.com", "privy", "401", "Authorization", "EACCES"):
        assert word.encode() not in kept, word
    assert _recall(state, _bash(f"curl -H 'Authorization: token {secret}' "
                                "https://api.example.com/repos/x")) == [
        "- This Bash command failed earlier in this session (exit 22)."
    ]  # fmt: skip
    assert _recall(state, _payload("PreToolUse", "Write", tool_input={
        "file_path": f"/srv/{secret}/privy-notes.md", "content": "y"})) == [
        "- A Write of this file failed earlier in this session."
    ]  # fmt: skip


@pytest.mark.parametrize(
    "error",
    ["Sibling tool call errored", "User rejected tool use", "[Request interrupted by user]"],
)
def test_a_cascade_or_a_users_stop_is_no_failure_to_recall(tmp_path: Path, error: str) -> None:
    state = tmp_path / "state"
    assert run_hook(_bash("make", event="PostToolUseFailure", error=error),
                    hook_env(state)).returncode == 0  # fmt: skip
    assert not (state / "recall" / f"{SID}.tsv").exists()


def test_a_symlinked_recall_folder_is_never_followed(tmp_path: Path) -> None:
    state, elsewhere = tmp_path / "state", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / f"{SID}.tsv").write_text("x1\tfile\tsrc/a.py\tplanted\n")
    state.mkdir(mode=0o700)
    (state / "recall").symlink_to(elsewhere)
    assert _recall(state, _edit("src/a.py")) == []
    failure = _bash("make", event="PostToolUseFailure", error="Exit code 2\nboom")
    assert run_hook(failure, hook_env(state)).returncode == 0
    assert sorted(p.name for p in elsewhere.iterdir()) == [f"{SID}.tsv"]


def test_garbage_and_bad_session_ids_print_nothing(state: Path) -> None:
    assert _recall(state, b'{"hook_event_name":"PreToolUse","tool_name":"Edit"') == []
    assert _recall(state, _edit("src/a.py", session="../../etc/passwd")) == []
    assert _recall(state, b"\xff\xfe not json PreToolUse \"tool_name\":\"Bash\"") == []
