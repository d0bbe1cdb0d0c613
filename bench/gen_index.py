"""Fast generation of a realistic index for the summarizer benchmarks (direct SQL inserts)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from indexer.index import store
from indexer.index.transactions import transaction

PROJECT = "/home/dev/shop"
SESSION_EVENTS = 500  # events per generated session
_COLUMNS = (
    "file_id, offset, line_no, ts_ns, pid, session_id, hook_event, event, agent_id, agent_type,"
    " cc_agent_id, tool_name, tool_use_id, description, instruction, output_summary, error,"
    " files, text, cwd, detail"
)
_INSERT = f"INSERT INTO entries({_COLUMNS}) VALUES ({','.join('?' * 21)})"
_T0 = 1_790_000_000_000_000_000
_FAIL = "Exit code 1\n=== test session starts ===\nFAILED tests/test_{m}.py::test_case_{k} - AssertionError: assert {k} == {j}\n=== 1 failed in 0.{k}s ==="


def _session(i: int) -> str:
    return f"bench-{i // SESSION_EVENTS:07d}"


def _row(i: int) -> tuple[Any, ...]:
    """Entry number `i`: a cycle of prompts, tool calls, failures, fixes, agents and reports."""
    sid = _session(i)
    n = i // SESSION_EVENTS  # a session number: texts vary across sessions, repeat inside them
    step = i % 25
    ts = _T0 + i * 2_000_000_000
    tid = f"toolu_{i:09d}"
    common = (1, i * 300, i + 1, ts, 1000 + i % 7, sid)
    module = f"mod{n % 800}"

    def tool(hook: str, event: str, name: str, desc: str, inp: dict[str, Any], *,
             files: str = "", out: str = "", err: str = "") -> tuple[Any, ...]:  # fmt: skip
        detail = json.dumps({"input": inp}).encode()
        return (*common, hook, event, "main", "", "", name, tid, desc, "", out, err, files, "",
                PROJECT, detail)  # fmt: skip

    def simple(hook: str, event: str, desc: str, text: str, agent: str = "main") -> tuple[Any, ...]:
        return (*common, hook, event, agent, "", "", "", "", desc, "", text if event.endswith("stop") else "",
                "", "", text, PROJECT, b"")  # fmt: skip

    path = f"{PROJECT}/src/{module}/file{i % 13}.py"
    if step == 0:
        text = (f"Add feature {n} to {module}. Never touch src/legacy{n % 40}.py. "
                f"Always run pytest before you commit. Use the {module} helpers.")  # fmt: skip
        return simple("UserPromptSubmit", "prompt", text[:80], text)
    if step in (1, 3, 9, 15):
        return tool("PostToolUse", "tool_result", "Read", f"Read {path}", {"file_path": path},
                    files=json.dumps([path]))  # fmt: skip
    if step in (2, 10, 16):
        inp = {"file_path": path, "old_string": "x = 1", "new_string": f"x = {i % 97}"}
        return tool(
            "PostToolUse", "tool_result", "Edit", f"Edit {path}", inp, files=json.dumps([path])
        )
    if step in (4, 6):
        cmd = f"python -m pytest -q tests/test_{module}.py"
        err = _FAIL.format(m=module, k=n % 50, j=n % 50 + 1)
        return tool(
            "PostToolUseFailure", "tool_failure", "Bash", "Run tests", {"command": cmd}, err=err
        )
    if step == 8:
        cmd = f"python -m pytest -q tests/test_{module}.py"
        return tool(
            "PostToolUse", "tool_result", "Bash", "Run tests", {"command": cmd}, out="12 passed"
        )
    if step in (5, 7, 11, 13, 17, 19, 21, 23):
        return tool("PreToolUse", "tool_use", "Bash", "List files", {"command": "ls -la src"})
    if step == 12:
        inp = {"todos": [{"content": f"Implement feature {n}", "status": "in_progress"},
                         {"content": "Write tests", "status": "pending"}]}  # fmt: skip
        return tool("PostToolUse", "tool_result", "TodoWrite", "TodoWrite", inp)
    if step == 14:
        text = (f"Decision: use library{n % 3000} instead of the old{n % 3000} package, because it "
                f"streams. Tests pass for {module}.")  # fmt: skip
        return simple(
            "SubagentStop", "subagent_stop", "subagent stop", text, agent=f"agent-{n % 900}"
        )
    if step == 24:
        text = (f"Feature {n} is done. I decided to keep {module} synchronous. "
                f"Remaining: document {module}.")  # fmt: skip
        return simple("Stop", "stop", "stop", text)
    return tool(
        "PostToolUse", "tool_result", "Grep", "Grep def", {"pattern": "def main", "path": PROJECT}
    )


def rows(start: int, count: int) -> Iterator[tuple[Any, ...]]:
    """The generated entries start .. start+count-1."""
    for i in range(start, start + count):
        yield _row(i)


def insert(conn: sqlite3.Connection, start: int, count: int) -> None:
    """Insert entries (and their sessions) with plain SQL in one transaction."""
    with transaction(conn):
        conn.executemany(_INSERT, rows(start, count))
        first, last = start // SESSION_EVENTS, (start + count - 1) // SESSION_EVENTS
        conn.executemany(
            "INSERT OR REPLACE INTO sessions(session_id, first_ns, last_ns, cwd, title,"
            " first_prompt, events, status) VALUES (?,?,?,?,?,?,?,?)",
            [
                (_session(s * SESSION_EVENTS), _T0 + s * SESSION_EVENTS * 2_000_000_000,
                 _T0 + (start + count) * 2_000_000_000, PROJECT, f"Feature {s}",
                 f"Add feature {s}", SESSION_EVENTS, "active")
                for s in range(first, last + 1)
            ],
        )  # fmt: skip


def build(path: Path, count: int, chunk: int = 200_000) -> float:
    """Create an index at `path` with `count` entries; return the seconds it took."""
    started = time.perf_counter()
    conn = store.connect(path)
    try:
        conn.execute("PRAGMA synchronous=OFF")
        for start in range(0, count, chunk):
            insert(conn, start, min(chunk, count - start))
    finally:
        conn.close()
    return time.perf_counter() - started
