"""Tests for indexer.views.update: per-agent JSONL views after commits, crash catch-up, rebuild, moves.

The reference for every check is the index itself: `render(index)` below renders each view
from the committed entries; the files on disk must equal it byte for byte.
"""

from __future__ import annotations

import itertools
import json
import re
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from helpers import run_cli

from ctxd_hook.hook import build_line
from indexer import fileio
from indexer.config import Config
from indexer.index import store
from indexer.index.transactions import transaction
from indexer.paths import StatePaths
from indexer.views import update as views
from indexer.views import writer as view_writer
from indexer.writer.catch_up import catch_up, open_writer, writer_lock

SEALED = "20200101T00.jsonl"
SESSION = "0f6a6c8e-1b2d-4c3e-9f40-5a6b7c8d9e01"
HOOKDATA_FIELDS = {"event", "agent_type", "agent_id", "description", "session_id", "timestamp"}
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
_ts = itertools.count(1_755_009_022_000_000_000, 1_000_003)
_encoder = msgspec.json.Encoder()


# --- helpers -----------------------------------------------------------------------------


def make_state(tmp_path: Path) -> StatePaths:
    paths = StatePaths(tmp_path / ".ctxd")
    paths.ensure()
    return paths


def spool(paths: StatePaths, *payloads: dict[str, Any]) -> None:
    with (paths.spool / SEALED).open("ab") as f:
        for p in payloads:
            f.write(build_line(json.dumps(p).encode(), next(_ts), 4242))


def ingest(paths: StatePaths) -> None:
    assert not catch_up(paths, Config()).by_daemon


def base(hook: str, **fields: Any) -> dict[str, Any]:
    return {"session_id": SESSION, "cwd": "/home/dev/app", "hook_event_name": hook, **fields}


def tool(
    hook: str, name: str, tool_use_id: str, tool_input: dict[str, Any], **fields: Any
) -> dict[str, Any]:
    return base(hook, tool_name=name, tool_use_id=tool_use_id, tool_input=tool_input, **fields)


def task_start(tool_use_id: str, agent: str, agent_type: str, task: str) -> dict[str, Any]:
    return tool(
        "PreToolUse",
        "Task",
        tool_use_id,
        {"description": task, "prompt": f"AgentId: {agent}\n{task}", "subagent_type": agent_type},
    )


def task_done(
    tool_use_id: str, agent: str, agent_type: str, cc: str, output: str
) -> dict[str, Any]:
    p = task_start(tool_use_id, agent, agent_type, "done")
    p["hook_event_name"] = "PostToolUse"
    p["tool_response"] = {
        "status": "completed",
        "agentId": cc,
        "content": [{"type": "text", "text": output}],
    }
    return p


def in_agent(cc: str, agent_type: str, tool_use_id: str, path: str) -> dict[str, Any]:
    return tool(
        "PreToolUse",
        "Edit",
        tool_use_id,
        {"file_path": path, "old_string": "a", "new_string": "b"},
        agent_id=cc,
        agent_type=agent_type,
    )


# The view line's fields in order (HookData's, then ctxd's); empty ones are left out.
VIEW_FIELDS = (
    "event", "agent_type", "agent_id", "description", "session_id", "timestamp", "seq",
    "instruction", "output_summary", "tool_name", "tool_use_id", "hook_event", "files", "error",
)  # fmt: skip
ENTRY_SQL = (
    "SELECT id, ts_ns, session_id, hook_event, event, agent_id, agent_type, tool_name,"
    " tool_use_id, description, instruction, output_summary, error, files FROM entries"
    " ORDER BY ts_ns, pid"
)


def render(paths: StatePaths) -> dict[Path, bytes]:
    """Every view as the index says it must be, written out here from the entries table alone
    (not with indexer.views.update): one line per entry in event-time order (ts_ns, then pid), in the
    agent's file, and in the two instruction views for agent_start/complete/launched/failed."""
    conn = sqlite3.connect(f"file:{paths.index_db}?mode=ro", uri=True)
    try:
        rows = conn.execute(ENTRY_SQL).fetchall()
    finally:
        conn.close()
    out: dict[Path, bytes] = {}
    for row in rows:
        (seq, ts_ns, session, hook_event, event, agent_id, agent_type, *rest) = row
        tool_name, tool_use_id, description, instruction, output, error, files = rest
        when = datetime.fromtimestamp(ts_ns // 10**9, UTC)
        values = {
            "event": event,
            "agent_type": agent_type,
            "agent_id": agent_id,
            "description": description,
            "session_id": session,
            "timestamp": f"{when:%Y-%m-%dT%H:%M:%S}.{ts_ns % 10**9 // 10**6:03d}Z",
            "seq": seq,
            "instruction": instruction if event == "agent_start" else "",
            "output_summary": output,
            "tool_name": tool_name,
            "tool_use_id": tool_use_id,
            "hook_event": hook_event,
            "files": json.loads(files) if files else [],
            "error": error,
        }
        required = VIEW_FIELDS[:7]
        line = {k: values[k] for k in VIEW_FIELDS if k in required or values[k]}
        data = json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        session_dir = paths.root / "sessions" / session
        targets = [session_dir / f"{agent_id}.jsonl"]
        if event in ("agent_start", "agent_complete", "agent_launched", "agent_failed"):
            targets += [
                session_dir / "agent-instructions.jsonl",
                paths.root / "sessions" / "all-agent-instructions.jsonl",
            ]
        for path in targets:
            out[path] = out.get(path, b"") + data
    return out


def on_disk(paths: StatePaths) -> dict[Path, bytes]:
    """Every non-empty view file (a view emptied by an agent move may remain as 0 bytes)."""
    files = [*paths.sessions.glob("*/*.jsonl"), paths.sessions / views.ALL_AGENT_INSTRUCTIONS]
    return {p: p.read_bytes() for p in files if p.exists() and p.stat().st_size}


def seqs(path: Path) -> list[int]:
    return [json.loads(line)["seq"] for line in path.read_bytes().splitlines()]


def agent_of(paths: StatePaths, tool_use_id: str, hook: str = "PreToolUse") -> str:
    conn = sqlite3.connect(f"file:{paths.index_db}?mode=ro", uri=True)
    try:
        row = conn.execute(
            "SELECT agent_id FROM entries WHERE tool_use_id=? AND hook_event=?", (tool_use_id, hook)
        ).fetchone()
        return str(row[0])
    finally:
        conn.close()


def one_agent_session() -> list[dict[str, Any]]:
    long_output = "All 12 tests pass. " * 300  # > 1000 characters: clipped in the view
    return [
        base("SessionStart", source="startup"),
        base("UserPromptSubmit", prompt="Add a login form and test it"),
        task_start("toolu_task1", "qa-1", "the-tester", "Run the tests"),
        base("SubagentStart", agent_id="cc-7f3a", agent_type="the-tester"),
        in_agent("cc-7f3a", "the-tester", "toolu_e1", "/home/dev/app/tests/test_login.py"),
        tool(
            "PostToolUse",
            "Bash",
            "toolu_b1",
            {"command": "pytest -q"},
            tool_response={"stdout": "12 passed", "stderr": ""},
            agent_id="cc-7f3a",
            agent_type="the-tester",
        ),
        base(
            "SubagentStop",
            agent_id="cc-7f3a",
            agent_type="the-tester",
            last_assistant_message="done",
        ),
        task_done("toolu_task1", "qa-1", "the-tester", "cc-7f3a", long_output),
        tool("PreToolUse", "Read", "toolu_r1", {"file_path": "/home/dev/app/login.tsx"}),
    ]


# --- tests -------------------------------------------------------------------------------


def test_views_are_written_after_the_commit_with_hookdata_fields(tmp_path: Path) -> None:
    paths = make_state(tmp_path)
    spool(paths, *one_agent_session())
    ingest(paths)

    session_dir = paths.sessions / SESSION
    expected = render(paths)
    assert on_disk(paths) == expected
    assert set(expected) == {
        session_dir / "main.jsonl",
        session_dir / "qa-1.jsonl",
        session_dir / "agent-instructions.jsonl",
        paths.sessions / "all-agent-instructions.jsonl",
    }
    events = {p.name: [json.loads(x)["event"] for x in b.splitlines()] for p, b in expected.items()}
    assert events["main.jsonl"] == ["session_start", "prompt", "tool_use"]
    assert events["qa-1.jsonl"] == [
        "agent_start",
        "subagent_start",
        "tool_use",
        "tool_result",
        "subagent_stop",
        "agent_complete",
    ]
    assert events["agent-instructions.jsonl"] == ["agent_start", "agent_complete"]
    assert events["all-agent-instructions.jsonl"] == ["agent_start", "agent_complete"]

    for path in expected:
        lines = [json.loads(x) for x in path.read_bytes().splitlines()]
        assert seqs(path) == sorted(set(seqs(path)))  # ascending, no repeats
        for v in lines:
            assert set(v) >= HOOKDATA_FIELDS, v
            assert TIMESTAMP.match(v["timestamp"]), v["timestamp"]
            assert v["session_id"] == SESSION
            assert len(v.get("output_summary", "")) <= 1000
            assert ("instruction" in v) == (v["event"] == "agent_start")
    [start, done] = [
        json.loads(x) for x in (session_dir / "agent-instructions.jsonl").read_bytes().splitlines()
    ]
    assert (start["agent_id"], start["agent_type"]) == ("qa-1", "the-tester")
    assert start["instruction"].startswith("AgentId: qa-1")
    assert done["output_summary"].startswith("All 12 tests pass.")
    assert done["output_summary"].endswith("[truncated]")
    [edit] = [json.loads(x) for x in (session_dir / "qa-1.jsonl").read_bytes().splitlines()][2:3]
    assert edit["files"] == ["/home/dev/app/tests/test_login.py"]
    assert edit["tool_name"] == "Edit"


def test_views_follow_later_passes_exactly(tmp_path: Path) -> None:
    paths = make_state(tmp_path)
    session = one_agent_session()
    for part in (session[:3], session[3:6], session[6:]):
        spool(paths, *part)
        ingest(paths)
        assert on_disk(paths) == render(paths)
    ingest(paths)  # nothing new: nothing appended twice
    assert on_disk(paths) == render(paths)


class _Killed(BaseException):
    """Stands for SIGKILL in the middle of a view append."""


def test_torn_view_line_after_a_crash_mid_append_is_cut_and_caught_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = make_state(tmp_path)
    session = one_agent_session()
    spool(paths, *session[:4])
    ingest(paths)
    spool(paths, *session[4:])

    real_write = fileio.write_all
    torn: list[int] = []

    def write_then_die(fd: int, data: bytes) -> None:
        real_write(fd, data[:-7])  # all but the end of the last line reached the file
        torn.append(fd)
        raise _Killed

    monkeypatch.setattr(view_writer, "write_all", write_then_die)
    with writer_lock(paths):
        writer = open_writer(paths, Config())
        try:
            writer.start()
            with pytest.raises(_Killed):
                writer.pass_once()  # the entries are committed; the views are not
        finally:
            writer.close()
    monkeypatch.undo()
    assert len(torn) == 1
    torn_files = [p for p in paths.sessions.rglob("*.jsonl") if not p.read_bytes().endswith(b"\n")]
    assert len(torn_files) == 1

    ingest(paths)  # the next start cuts the torn line and appends what is missing, once
    assert on_disk(paths) == render(paths)
    for view in on_disk(paths):
        assert len(seqs(view)) == len(set(seqs(view)))


def test_view_truncated_mid_line_with_uncommitted_bookkeeping_is_repaired(tmp_path: Path) -> None:
    # The state a SIGKILL leaves: the index committed, `views_upto` not yet moved, and the
    # last view line half written.
    paths = make_state(tmp_path)
    spool(paths, *one_agent_session())
    ingest(paths)
    expected = render(paths)
    main = paths.sessions / SESSION / "main.jsonl"
    qa = paths.sessions / SESSION / "qa-1.jsonl"
    with main.open("r+b") as f:
        f.truncate(main.stat().st_size - 12)
    with qa.open("r+b") as f:
        f.truncate(len(expected[qa].splitlines(keepends=True)[0]) + 5)  # first line + a torn one
    conn = store.connect(paths.index_db)
    try:
        with transaction(conn):
            store.set_meta(conn, "views_upto", "2")
    finally:
        conn.close()
    ingest(paths)
    assert on_disk(paths) == expected


def test_a_corrupt_last_view_line_is_passed_over_when_catching_up(tmp_path: Path) -> None:
    # Bookkeeping rolled back by a kill (`views_upto` behind the files), and a line that is
    # not a view line at the end of a view: its last line that parses says where it stands.
    paths = make_state(tmp_path)
    spool(paths, *one_agent_session())
    ingest(paths)
    expected = render(paths)
    main = paths.sessions / SESSION / "main.jsonl"
    with main.open("ab") as f:
        f.write(b'{"event":"tool_use","se\n')
    conn = store.connect(paths.index_db)
    try:
        with transaction(conn):
            store.set_meta(conn, "views_upto", "2")
    finally:
        conn.close()
    ingest(paths)
    lines = main.read_bytes().splitlines(keepends=True)
    kept = [x for x in lines if not x.startswith(b'{"event":"tool_use","se')]
    assert b"".join(kept) == expected[main]
    assert {p: b for p, b in on_disk(paths).items() if p != main} == {
        p: b for p, b in expected.items() if p != main
    }


def test_deleted_views_are_regenerated_identically_by_ctxd_rebuild(tmp_path: Path) -> None:
    paths = make_state(tmp_path)
    spool(paths, *one_agent_session())
    spool(
        paths,
        *[
            tool(
                "PreToolUse",
                "Grep",
                f"toolu_g{n}",
                {"pattern": f"login{n}", "path": "/home/dev/app"},
            )
            for n in range(20)
        ],
    )
    ingest(paths)
    before = on_disk(paths)
    assert before == render(paths)
    for path in before:
        path.unlink()
    result = run_cli("rebuild", "--state-dir", str(paths.root))
    assert result.returncode == 0, result.stderr
    assert "rebuilt the views" in result.stdout
    assert on_disk(paths) == before
    # rebuilding over existing views changes nothing either
    assert run_cli("rebuild", "--state-dir", str(paths.root)).returncode == 0
    assert on_disk(paths) == before


@pytest.mark.parametrize("passes", ["one-pass", "corrected-in-a-later-pass"])
def test_parallel_agents_linked_in_the_wrong_order_are_moved_without_duplicates(
    tmp_path: Path, passes: str
) -> None:
    # Two agents of the same type run in parallel; their SubagentStart events arrive in the
    # opposite order of their Task calls, so the FIFO guess links each Claude Code id to the
    # wrong agent. Each Task's PostToolUse names its agentId: the entries move (attribution
    # `_link`) and both views are rebuilt from the index.
    paths = make_state(tmp_path)
    first = [
        task_start("toolu_ta", "alpha", "coder", "Build the API"),
        task_start("toolu_tb", "beta", "coder", "Build the UI"),
        base("SubagentStart", agent_id="cc-b", agent_type="coder"),
        base("SubagentStart", agent_id="cc-a", agent_type="coder"),
        in_agent("cc-b", "coder", "toolu_eb1", "/app/ui.tsx"),
        in_agent("cc-a", "coder", "toolu_ea1", "/app/api.py"),
    ]
    second = [
        in_agent("cc-b", "coder", "toolu_eb2", "/app/ui.css"),
        task_done("toolu_ta", "alpha", "coder", "cc-a", "API done"),
        in_agent("cc-b", "coder", "toolu_eb3", "/app/ui.test.tsx"),
        task_done("toolu_tb", "beta", "coder", "cc-b", "UI done"),
    ]
    if passes == "one-pass":
        spool(paths, *first, *second)
        ingest(paths)
    else:
        spool(paths, *first)
        ingest(paths)
        assert agent_of(paths, "toolu_eb1") == "alpha"  # the FIFO guess, wrong for now
        assert on_disk(paths) == render(paths)
        spool(paths, *second)
        ingest(paths)

    for tid in ("toolu_ea1",):
        assert agent_of(paths, tid) == "alpha"
    for tid in ("toolu_eb1", "toolu_eb2", "toolu_eb3"):
        assert agent_of(paths, tid) == "beta"
    assert on_disk(paths) == render(paths)
    session_dir = paths.sessions / SESSION
    alpha = [json.loads(x) for x in (session_dir / "alpha.jsonl").read_bytes().splitlines()]
    beta = [json.loads(x) for x in (session_dir / "beta.jsonl").read_bytes().splitlines()]
    assert {v.get("tool_use_id") for v in alpha if v["event"] == "tool_use"} == {"toolu_ea1"}
    assert {v.get("tool_use_id") for v in beta if v["event"] == "tool_use"} == {
        "toolu_eb1",
        "toolu_eb2",
        "toolu_eb3",
    }
    all_seqs = [
        s for p in (session_dir / "alpha.jsonl", session_dir / "beta.jsonl") for s in seqs(p)
    ]
    assert len(all_seqs) == len(set(all_seqs))
    assert not (session_dir / "main.jsonl").exists()
    # and a full rebuild agrees with what the incremental path produced
    before = on_disk(paths)
    assert run_cli("rebuild", "--state-dir", str(paths.root)).returncode == 0
    assert on_disk(paths) == before
