"""`ctxd import` as a user runs it: the default folder, the summary, errors, the bar, memory."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import sqlite3
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from helpers import CORPUS, clean_env

from indexer.transcripts.paths import project_folder_name

TRANSCRIPTS = CORPUS / "transcripts"
CHICKEN_TRANSCRIPT = (
    TRANSCRIPTS
    / "imjoshnewton__chicken-tracker-t3"
    / "6e6cddcb-4e40-4782-ab78-81a62ee507e6"
    / "chat.jsonl"
)

pytestmark = pytest.mark.skipif(not TRANSCRIPTS.is_dir(), reason=f"no corpus at {CORPUS}")


def _db(state: Path) -> sqlite3.Connection:
    return sqlite3.connect(state / "index.db")


def _ctxd(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "summarizer.cli.app", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _subagent_line(agent_id: str, session: str) -> bytes:
    base = {"sessionId": session, "cwd": "/p", "agentId": agent_id, "isSidechain": True}
    call = {
        **base,
        "type": "assistant",
        "uuid": "u1",
        "timestamp": "2026-01-03T10:00:02.000Z",
        "message": {
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_sub1",
                    "name": "Read",
                    "input": {"file_path": "/p/a.py"},
                }
            ]
        },
    }
    result = {
        **base,
        "type": "user",
        "uuid": "u2",
        "timestamp": "2026-01-03T10:00:03.000Z",
        "message": {
            "content": [{"type": "tool_result", "tool_use_id": "toolu_sub1", "content": "print(1)"}]
        },
        "toolUseResult": {"type": "text", "file": {"filePath": "/p/a.py"}},
    }
    return (json.dumps(call) + "\n" + json.dumps(result) + "\n").encode()


def test_the_command_imports_this_projects_folder_under_claude_config_dir(tmp_path: Path) -> None:
    project = tmp_path / "my.project"
    (project / ".git").mkdir(parents=True)
    config = tmp_path / "claude-config"
    folder = config / "projects" / project_folder_name(str(project))
    assert folder.name.endswith("-my-project") and "/" not in folder.name
    session = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
    (folder / session / "subagents").mkdir(parents=True)
    src = TRANSCRIPTS / "d-kimuson__claude-code-viewer" / f"{session}.jsonl"
    (folder / f"{session}.jsonl").write_bytes(src.read_bytes())
    agent_file = folder / session / "subagents" / "agent-a4d2c8f1e0b3a297.jsonl"
    agent_file.write_bytes(_subagent_line("a4d2c8f1e0b3a297", session))
    (folder / session / "subagents" / "agent-a4d2c8f1e0b3a297.meta.json").write_text(
        '{"agentType":"Explore"}'
    )
    for f in (folder / f"{session}.jsonl", agent_file):
        os.utime(f, (1_700_000_000, 1_700_000_000))  # finished sessions, idle for long
    env = clean_env(CLAUDE_CONFIG_DIR=str(config))
    run = _ctxd("import", env=env, cwd=project)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("imported ") and "of 2 transcript files" in run.stdout
    assert run.stderr == ""  # no progress bar without a terminal
    state = project / ".ctxd"
    with _db(state) as conn:
        sub = conn.execute(
            "SELECT cc_agent_id, agent_type, files FROM entries WHERE tool_use_id='toolu_sub1'"
        ).fetchall()
    assert sub == [("a4d2c8f1e0b3a297", "Explore", '["/p/a.py"]')]
    assert (state / "index.db").stat().st_mode & 0o777 == 0o600
    again = _ctxd("import", env=env, cwd=project)
    assert again.stdout.startswith("imported 0 entries from 0 lines read in 0 of 2"), again.stdout


def test_the_command_says_what_is_missing_in_one_line(tmp_path: Path) -> None:
    env = clean_env(CLAUDE_CONFIG_DIR=str(tmp_path / "nothing"))
    run = _ctxd("import", env=env, cwd=tmp_path)
    assert run.returncode == 1
    assert run.stderr.count("\n") == 1 and "no transcripts of this project" in run.stderr
    assert "--all" in run.stderr
    run = _ctxd("import", str(tmp_path / "missing.jsonl"), env=env, cwd=tmp_path)
    assert run.returncode == 1 and "does not exist" in run.stderr


def test_imported_sessions_feed_todos_failures_and_memory(tmp_path: Path) -> None:
    # Both todo shapes: TodoWrite lists (templar, 1.0.57) and TaskCreate/TaskUpdate calls
    # (chicken-tracker, 2.1.32); failed tool calls become remembered failures.
    env = clean_env()
    state = str(tmp_path / ".ctxd")
    sources = [
        str(TRANSCRIPTS / "conneroisu__templar" / "chat.jsonl"),
        str(CHICKEN_TRANSCRIPT),
    ]
    run = _ctxd("import", "--state-dir", state, *sources, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    resume = _ctxd("resume", "b9712494", "--json", "--state-dir", state, env=env, cwd=tmp_path)
    todos = json.loads(resume.stdout)["open_todos"]
    assert todos and {t["source"] for t in todos} == {"TodoWrite"}
    compact = _ctxd("compact", "--state-dir", state, env=env, cwd=tmp_path)
    assert compact.returncode == 0, compact.stderr
    assert "failures" in compact.stdout
    inject = _ctxd("inject", "--format", "markdown", "--state-dir", state, env=env, cwd=tmp_path)
    assert "Phase 1: Remove unused packages + PWA" in inject.stdout  # a TaskCreate subject
    assert "Recent Failures to Avoid" in inject.stdout


def test_a_progress_bar_on_a_terminal_only_and_tqdm_loaded_only_then(tmp_path: Path) -> None:
    source = str(TRANSCRIPTS / "noahmbrown2-pixel__ice-hockey-game" / "chat.jsonl")
    code = (
        "import sys; from summarizer.cli.app import main; "
        f"rc = main(['import', '--state-dir', sys.argv[1], {source!r}]); "
        "print('tqdm' in sys.modules, rc)"
    )
    plain = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "a")],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert plain.stdout.splitlines()[-1] == "False 0" and plain.stderr == ""
    controller, terminal = pty.openpty()
    # A new pseudo-terminal is 0 columns wide: a bar would have no room.
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, str(tmp_path / "b")],
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=terminal,
            text=True,
        )
        os.close(terminal)
        out, _ = proc.communicate(timeout=120)
        shown = b""
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the terminal's other end is closed
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(controller)
    assert out.splitlines()[-1] == "True 0"
    assert b"importing" in shown and b"100%" in shown


def test_all_imports_every_project_folder(tmp_path: Path) -> None:
    config = tmp_path / "claude-config"
    sources = {
        "-home-u-one": TRANSCRIPTS / "noahmbrown2-pixel__ice-hockey-game" / "chat.jsonl",
        "-home-u-two": TRANSCRIPTS / "rickithadi__9line-landing" / "chat.jsonl",
    }
    sessions = set()
    for name, source in sources.items():
        (config / "projects" / name).mkdir(parents=True)
        (config / "projects" / name / "s.jsonl").write_bytes(source.read_bytes())
        records = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
        sessions |= {r["sessionId"] for r in records if r.get("type") == "user"}
    env = clean_env(CLAUDE_CONFIG_DIR=str(config))
    state = tmp_path / ".ctxd"
    run = _ctxd("import", "--all", "--state-dir", str(state), env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "in 2 of 2 transcript files" in run.stdout
    with _db(state) as conn:
        stored = {r[0] for r in conn.execute("SELECT session_id FROM sessions")}
    assert sessions <= stored


def test_the_command_says_to_stop_the_daemon_that_holds_the_index(tmp_path: Path) -> None:
    from indexer.paths import StatePaths
    from indexer.writer.catch_up import writer_lock

    state = tmp_path / ".ctxd"
    source = str(TRANSCRIPTS / "noahmbrown2-pixel__ice-hockey-game" / "chat.jsonl")
    with writer_lock(StatePaths(state)):  # as a running daemon holds it
        run = _ctxd("import", "--state-dir", str(state), source, env=clean_env(), cwd=tmp_path)
    assert run.returncode == 1
    assert run.stderr.count("\n") == 1 and "`ctxd stop`" in run.stderr
    assert not (state / "index.db").exists()
