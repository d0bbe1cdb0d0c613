"""`ctxd read` (seed 000 §3.3), `status`, `ingest`, `rebuild` and `--help`, end to end.

Events go through the real hook; every command runs as a real `ctxd` subprocess. The fixtures
in tests/data/read/ are hook payloads modelled on the corpus (Claude Code 2.1 shapes):

- session-with-agents: the orchestrator, `arch-001` (AgentId in the prompt, a 3 KB report) and
  `dev-auth-system` (a failing Bash call), each with SubagentStart/Stop and tool events.
- later-session: a later session where `arch-001` appears again.
- parallel-same-type: two Explore agents started together; the second one's tool events arrive
  first, so arrival order links them to the first agent until the Agent results relink them.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    REPO,
    hook_env,
    payload,
    query,
    run_cli,
    run_hook,
    spool_files,
)

from ctxd_hook import hook
from summarizer.cli.app import build_parser

DATA = Path(__file__).resolve().parents[3] / "data" / "read"
S1 = "6b0f3b1e-5c1a-4d8e-9a77-0c2e4f1d9a10"  # session-with-agents
S2 = "9c1e2d3f-4a5b-4c6d-8e7f-0a1b2c3d4e5f"  # later-session
S3 = "2d4f6a8c-0e1b-4d3f-9a5c-7e9b1d3f5a70"  # parallel-same-type
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
TEXT_LINE = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z) \[([a-z_]+)\] (.*)$")
HOOKDATA_REQUIRED = ("event", "agent_type", "agent_id", "description", "session_id", "timestamp")
METADATA_KEYS = {
    "agent_id",
    "session_id",
    "total_entries",
    "file_size_bytes",
    "last_modified",
    "context_file",
}
INGEST_OUT = re.compile(
    r"^indexed (\d+) entries from (\d+) lines \((\d+) bytes\); (\d+) duplicates, "
    r"(\d+) quarantined, (\d+) anomalies$"
)


def fixture_lines(name: str) -> list[bytes]:
    return (DATA / name / "events.jsonl").read_bytes().splitlines()


def feed(state: Path, name: str) -> None:
    """Send every payload of a fixture through the real hook process, in order."""
    for line in fixture_lines(name):
        proc = run_hook(line, hook_env(state))
        assert proc.returncode == 0, proc.stderr


def read(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("read", *args, state_dir=state)


def read_json(state: Path, *args: str) -> dict[str, Any]:
    proc = read(state, *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def assert_one_line_error(proc: subprocess.CompletedProcess[str], message: str) -> None:
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert proc.stderr.endswith("\n") and proc.stderr.count("\n") == 1, proc.stderr
    assert message in proc.stderr, proc.stderr


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All three fixtures sent through the real hook and indexed (shared, read-only)."""
    state = tmp_path_factory.mktemp("read") / "state"
    for name in ("session-with-agents", "later-session", "parallel-same-type"):
        feed(state, name)
    assert run_cli("ingest", state_dir=state).returncode == 0
    return state


# --- flag validation (seed 000 §3.3.2) -------------------------------------------------------


def test_agent_id_is_required(seeded: Path) -> None:
    assert_one_line_error(read(seeded), "--agent-id is required")
    assert_one_line_error(read(seeded, "--agent-id", ""), "--agent-id is required")


@pytest.mark.parametrize(
    "agent_id",
    ["a", "-lead", "lead-", "_x1", "has space", "../etc", "a/b", "x" * 65, "ré-agent", "a.b"],
)
def test_invalid_agent_id_format(seeded: Path, agent_id: str) -> None:
    assert_one_line_error(read(seeded, f"--agent-id={agent_id}"), "invalid agent-id format")


@pytest.mark.parametrize("agent_id", ["ab", "x" * 64, "Arch_01-b", "9lives"])
def test_valid_agent_id_formats_are_accepted(seeded: Path, agent_id: str) -> None:
    assert read_json(seeded, "--agent-id", agent_id) == {"entries": []}


@pytest.mark.parametrize("lines", ["0", "1001", "-3", "100000"])
def test_lines_out_of_bounds(seeded: Path, lines: str) -> None:
    proc = read(seeded, "--agent-id", "main", f"--lines={lines}")
    assert_one_line_error(proc, "--lines must be between 1 and 1000")


@pytest.mark.parametrize("lines", ["abc", "1.5", ""])
def test_lines_not_an_integer(seeded: Path, lines: str) -> None:
    proc = read(seeded, "--agent-id", "main", f"--lines={lines}")
    assert_one_line_error(proc, "--lines")
    assert proc.returncode == 2


@pytest.mark.parametrize("fmt", ["xml", "JSON", ""])
def test_unknown_format(seeded: Path, fmt: str) -> None:
    assert_one_line_error(read(seeded, "--agent-id", "main", f"--format={fmt}"), "--format")


@pytest.mark.parametrize("session", ["../x", "/etc", ".hidden", "a/b"])
def test_invalid_session_id(seeded: Path, session: str) -> None:
    proc = read(seeded, "--agent-id", "arch-001", f"--session={session}")
    assert_one_line_error(proc, "invalid session id")


# --- what read returns ---------------------------------------------------------------------


def test_lines_default_50_and_bounds(state_dir: Path) -> None:
    session = "5e5e5e5e-0000-4000-8000-000000000060"
    for i in range(60):
        data = payload(
            session_id=session,
            tool_name="Bash",
            tool_use_id=f"toolu_{i:02d}",
            tool_input={"command": f"echo {i}", "description": f"step {i}"},
        )
        assert hook.run(data, hook_env(state_dir), "/")
    default = read_json(state_dir, "--agent-id", "main")["entries"]
    assert [e["description"] for e in default] == [f"step {i}" for i in range(10, 60)]
    assert [e["seq"] for e in default] == sorted(e["seq"] for e in default)
    one = read_json(state_dir, "--agent-id", "main", "--lines", "1")["entries"]
    assert [e["description"] for e in one] == ["step 59"]
    every = read_json(state_dir, "--agent-id", "main", "--lines", "1000")["entries"]
    assert len(every) == 60
    meta = read_json(state_dir, "--agent-id", "main", "--lines", "5", "--include-metadata")
    assert meta["metadata"]["total_entries"] == 60 and len(meta["entries"]) == 5


def test_session_defaults_to_the_latest_with_that_agent(seeded: Path) -> None:
    latest = read_json(seeded, "--agent-id", "arch-001", "--include-metadata")
    assert latest["metadata"]["session_id"] == S2
    assert {e["session_id"] for e in latest["entries"]} == {S2}
    assert [e["event"] for e in latest["entries"]] == ["agent_start", "tool_use", "agent_complete"]
    older = read_json(seeded, "--agent-id", "arch-001", "--session", S1, "--include-metadata")
    assert older["metadata"]["session_id"] == S1
    assert {e["session_id"] for e in older["entries"]} == {S1}
    # dev-auth-system exists only in S1, scout-a only in S3: each default finds its session.
    assert read_json(seeded, "--agent-id", "dev-auth-system")["entries"][0]["session_id"] == S1
    assert read_json(seeded, "--agent-id", "scout-a")["entries"][0]["session_id"] == S3
    # A valid but unknown session is an empty result, not an error.
    other = "0000aaaa-0000-4000-8000-000000000000"
    assert read_json(seeded, "--agent-id", "arch-001", "--session", other) == {"entries": []}


def test_json_output_shape(seeded: Path) -> None:
    plain = read_json(seeded, "--agent-id", "arch-001", "--session", S1)
    assert list(plain) == ["entries"]
    full = read_json(seeded, "--agent-id", "arch-001", "--session", S1, "--include-metadata")
    assert set(full) == {"metadata", "entries"}
    assert full["entries"] == plain["entries"]
    meta = full["metadata"]
    assert set(meta) == METADATA_KEYS
    assert meta["agent_id"] == "arch-001" and meta["session_id"] == S1
    ((count,),) = query(
        seeded, "SELECT count(*) FROM entries WHERE session_id=? AND agent_id=?", (S1, "arch-001")
    )
    assert meta["total_entries"] == count == len(full["entries"]) == 8
    context_file = Path(meta["context_file"])
    assert context_file == seeded / "sessions" / S1 / "arch-001.jsonl"
    st = context_file.stat()
    assert meta["file_size_bytes"] == st.st_size
    assert TIMESTAMP.match(meta["last_modified"])
    assert meta["last_modified"][:19] == _iso(st.st_mtime_ns)[:19]


def _iso(ns: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 1_000_000_000))


def test_text_output_shape(seeded: Path) -> None:
    as_json = read_json(seeded, "--agent-id", "dev-auth-system")["entries"]
    proc = read(seeded, "--agent-id", "dev-auth-system", "--format", "text")
    assert proc.returncode == 0 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert lines[0] == f"Agent: dev-auth-system | Session: {S1} | Entries: 6"
    assert lines[1] == "---"
    parsed = [TEXT_LINE.match(line) for line in lines[2:]]
    assert all(parsed), lines
    assert [(m[1], m[2], m[3]) for m in parsed if m] == [
        (e["timestamp"], e["event"], e["description"]) for e in as_json
    ]
    assert [m[2] for m in parsed if m] == [
        "agent_start",
        "subagent_start",
        "tool_use",
        "tool_failure",
        "subagent_stop",
        "agent_complete",
    ]


def test_text_output_with_metadata(seeded: Path) -> None:
    proc = read(seeded, "--agent-id", "scout-b", "--format", "text", "--include-metadata")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0] == f"Agent: scout-b | Session: {S3} | Entries: 4"
    assert "---" in lines[1:3]
    assert len([line for line in lines if TEXT_LINE.match(line)]) == 4


def test_unknown_agent_is_an_empty_result(seeded: Path) -> None:
    assert read_json(seeded, "--agent-id", "nobody-here") == {"entries": []}
    meta = read_json(seeded, "--agent-id", "nobody-here", "--include-metadata")
    assert meta["entries"] == []
    assert meta["metadata"]["total_entries"] == 0
    assert meta["metadata"]["file_size_bytes"] == 0
    proc = read(seeded, "--agent-id", "nobody-here", "--format", "text")
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.splitlines() == ["Agent: nobody-here | Session: - | Entries: 0", "---"]


def test_read_on_a_project_without_state(tmp_path: Path) -> None:
    # Nothing was ever recorded here: say so (one line, non-zero) and create nothing.
    proc = run_cli("read", "--agent-id", "main", state_dir=tmp_path / "never-created")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "ctxd init" in proc.stderr, proc.stderr
    assert not (tmp_path / "never-created").exists()


def test_entries_are_hookdata_compatible(seeded: Path) -> None:
    records = [json.loads(line) for line in fixture_lines("session-with-agents")]
    arch_call = [r for r in records if r.get("tool_use_id") == "toolu_01Ag3ntArch001xQz7Lm2Pq9R"]
    prompt = arch_call[0]["tool_input"]["prompt"]
    report = arch_call[1]["tool_response"]["content"][0]
    for agent, session in (
        ("arch-001", S1),
        ("arch-001", S2),
        ("dev-auth-system", S1),
        ("main", S1),
    ):
        entries = read_json(seeded, "--agent-id", agent, "--session", session)["entries"]
        assert entries
        for e in entries:
            for key in HOOKDATA_REQUIRED:
                assert isinstance(e[key], str), (key, e)
            assert e["agent_id"] == agent and e["session_id"] == session
            assert TIMESTAMP.match(e["timestamp"]), e["timestamp"]
            assert len(e["description"]) <= 500
            assert len(e.get("output_summary", "")) <= 1000
            assert ("instruction" in e) == (e["event"] == "agent_start"), e
            if agent != "main":
                assert e["agent_type"] in ("the-architect", "the-developer")
        assert [e["timestamp"] for e in entries] == sorted(e["timestamp"] for e in entries)
    arch = read_json(seeded, "--agent-id", "arch-001", "--session", S1)["entries"]
    start = next(e for e in arch if e["event"] == "agent_start")
    assert start["instruction"] == prompt
    assert start["description"] == "Design authentication system"
    complete = next(e for e in arch if e["event"] == "agent_complete")
    assert len(report["text"]) > 3000
    assert 900 < len(complete["output_summary"]) <= 1000
    assert complete["output_summary"].startswith("## Authentication design")
    dev = read_json(seeded, "--agent-id", "dev-auth-system")["entries"]
    failure = next(e for e in dev if e["event"] == "tool_failure")
    assert failure["error"].startswith("Exit code 1")
    assert failure["description"] == "Run login tests"
    main = read_json(seeded, "--agent-id", "main", "--session", S1)["entries"]
    assert {e["agent_type"] for e in main} == {""}
    assert [e["event"] for e in main] == [
        "session_start",
        "prompt",
        "tool_use",
        "tool_result",
        "stop",
    ]


def test_agent_id_is_case_insensitive(seeded: Path) -> None:
    upper = read_json(seeded, "--agent-id", "ARCH-001", "--include-metadata")
    assert upper["metadata"]["agent_id"] == "arch-001"
    assert upper["entries"] == read_json(seeded, "--agent-id", "arch-001")["entries"]


def test_parallel_agents_of_one_type_are_relinked(seeded: Path) -> None:
    """Entries first linked by arrival order move to the agent the Agent result names."""
    b = read_json(seeded, "--agent-id", "scout-b")["entries"]
    assert [(e["event"], e.get("tool_name")) for e in b] == [
        ("agent_start", "Agent"),
        ("tool_use", "Glob"),
        ("tool_use", "Read"),
        ("agent_complete", "Agent"),
    ]
    a = read_json(seeded, "--agent-id", "scout-a")["entries"]
    assert [(e["event"], e.get("tool_name")) for e in a] == [
        ("agent_start", "Agent"),
        ("tool_use", "Grep"),
        ("agent_complete", "Agent"),
    ]
    rows = query(
        seeded,
        "SELECT cc_agent_id, agent_id FROM entries WHERE session_id=? AND cc_agent_id<>''",
        (S3,),
    )
    owner = {"a1111111111111111": "scout-a", "a2222222222222222": "scout-b"}
    assert rows and all(owner[cc] == agent for cc, agent in rows)


def test_read_catches_up_without_a_daemon(state_dir: Path) -> None:
    """I12: an event appended by the hook is visible to the very next read, no ingest run."""
    session = "1212abab-0000-4000-8000-000000000012"
    first = payload(session_id=session, tool_name="Bash", tool_use_id="toolu_i12_1")
    assert run_hook(first, hook_env(state_dir)).returncode == 0
    entries = read_json(state_dir, "--agent-id", "main")["entries"]
    assert [e["tool_use_id"] for e in entries] == ["toolu_i12_1"]
    second = payload(session_id=session, tool_name="Read", tool_use_id="toolu_i12_2")
    assert run_hook(second, hook_env(state_dir)).returncode == 0
    entries = read_json(state_dir, "--agent-id", "main")["entries"]
    assert [e["tool_use_id"] for e in entries] == ["toolu_i12_1", "toolu_i12_2"]
    status = run_cli("status", state_dir=state_dir)
    assert "not running" in status.stdout and "0 bytes, 0 lines" in status.stdout


# --- status ------------------------------------------------------------------------------


def status_json(state: Path) -> dict[str, Any]:
    proc = run_cli("status", "--json", state_dir=state)
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def spool_size(state: Path) -> int:
    return sum(p.stat().st_size for p in spool_files(state))


def test_status_reports_lag_then_counts(state_dir: Path) -> None:
    state_dir.mkdir(mode=0o700)  # as `ctxd init` leaves it (no state dir at all is an error)
    empty = status_json(state_dir)
    assert empty["daemon"] is None
    assert empty["lag"] == {"bytes": 0, "lines": 0}
    assert (empty["entries"], empty["sessions"], empty["agents"]) == (0, 0, 0)

    feed(state_dir, "session-with-agents")
    before = status_json(state_dir)
    assert before["lag"] == {"bytes": spool_size(state_dir), "lines": 19}
    assert before["entries"] == 0 and before["last_ingest"] is None
    text = run_cli("status", state_dir=state_dir).stdout
    assert "daemon:      not running" in text
    assert f"spool lag:   {spool_size(state_dir)} bytes, 19 lines not yet indexed" in text

    assert run_cli("ingest", state_dir=state_dir).returncode == 0
    after = status_json(state_dir)
    assert after["lag"] == {"bytes": 0, "lines": 0}
    assert (after["entries"], after["sessions"], after["agents"], after["quarantined"]) == (
        19,
        1,
        2,
        0,
    )
    assert TIMESTAMP.match(after["last_ingest"])

    size = spool_size(state_dir)
    feed(state_dir, "later-session")  # its SessionStart may catch up by itself (resume path)
    assert run_hook(b"{not json", hook_env(state_dir)).returncode == 0
    lagging = status_json(state_dir)
    if lagging["entries"] == 19:  # nothing caught up meanwhile
        assert lagging["lag"] == {"bytes": spool_size(state_dir) - size, "lines": 5}
    assert run_cli("ingest", state_dir=state_dir).returncode == 0
    final = status_json(state_dir)
    assert final["lag"] == {"bytes": 0, "lines": 0}
    assert (final["entries"], final["sessions"], final["agents"], final["quarantined"]) == (
        23,
        2,
        3,
        1,
    )
    text = run_cli("status", state_dir=state_dir).stdout.splitlines()
    assert [line.split(":")[0] for line in text] == [
        "daemon",
        "spool lag",
        "entries",
        "sessions",
        "agents",
        "quarantined",
        "last ingest",
        "state dir",
    ]


# --- ingest ------------------------------------------------------------------------------


def test_ingest_output(state_dir: Path) -> None:
    events = [
        payload(tool_name="Bash", tool_use_id="toolu_a"),
        payload(tool_name="Bash", tool_use_id="toolu_a"),  # delivered twice
        b'{"session_id": "s", "hook_event_name": ',  # truncated JSON
        payload(hook_event_name="UserPromptSubmit", prompt="hello"),
        payload(tool_name="Read", tool_use_id="toolu_b"),
    ]
    for data in events:
        assert run_hook(data, hook_env(state_dir)).returncode == 0
    proc = run_cli("ingest", state_dir=state_dir)
    assert proc.returncode == 0 and proc.stderr == ""
    m = INGEST_OUT.match(proc.stdout.strip())
    assert m, proc.stdout
    assert [int(g) for g in m.groups()] == [3, 5, spool_size(state_dir), 1, 1, 0]
    again = run_cli("ingest", state_dir=state_dir)
    assert again.stdout.strip() == (
        "indexed 0 entries from 0 lines (0 bytes); 0 duplicates, 0 quarantined, 0 anomalies"
    )


def test_ingest_with_an_empty_or_missing_state_dir(tmp_path: Path) -> None:
    proc = run_cli("ingest", state_dir=tmp_path / "fresh")
    assert proc.returncode == 1 and "no ctxd state in" in proc.stderr, proc.stderr
    assert not (tmp_path / "fresh").exists()
    (tmp_path / "fresh").mkdir(mode=0o700)
    proc = run_cli("ingest", state_dir=tmp_path / "fresh")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("indexed 0 entries from 0 lines")


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    """A state dir that cannot be created: one stderr line, non-zero exit, no traceback."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for args in (("ingest",), ("status",), ("read", "--agent-id", "main"), ("rebuild",)):
        proc = run_cli(*args, state_dir=blocker / "state")
        if args == ("status",) and proc.returncode == 0:
            continue  # status only reads; it may report an empty state
        assert_one_line_error(proc, "ctxd")


# --- rebuild -----------------------------------------------------------------------------


def view_files(state: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(state)): p.read_bytes()
        for p in sorted((state / "sessions").rglob("*.jsonl"))
    }


def test_rebuild_regenerates_identical_views(state_dir: Path) -> None:
    # Views built incrementally over several passes (ingest, a read's catch-up, ingest).
    feed(state_dir, "session-with-agents")
    assert run_cli("ingest", state_dir=state_dir).returncode == 0
    feed(state_dir, "parallel-same-type")
    read_json(state_dir, "--agent-id", "scout-a")
    feed(state_dir, "later-session")
    assert run_cli("ingest", state_dir=state_dir).returncode == 0
    original = view_files(state_dir)
    assert f"sessions/{S1}/arch-001.jsonl" in original
    assert "sessions/all-agent-instructions.jsonl" in original
    assert f"sessions/{S3}/agent-instructions.jsonl" in original
    total_lines = sum(data.count(b"\n") for data in original.values())

    for name in original:
        (state_dir / name).unlink()
    proc = run_cli("rebuild", state_dir=state_dir)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"rebuilt the views: {total_lines} lines; the search index: ")
    assert view_files(state_dir) == original

    # A damaged view (torn, foreign lines) and a stale extra file are replaced as well.
    damaged = state_dir / f"sessions/{S1}/main.jsonl"
    damaged.write_bytes(b'{"seq": 999, "event": "bogus"}\n{"torn')
    (state_dir / f"sessions/{S1}/ghost.jsonl").write_bytes(b"{}\n")
    assert run_cli("rebuild", state_dir=state_dir).returncode == 0
    assert view_files(state_dir) == original
    for data in original.values():
        for line in data.splitlines():
            assert set(json.loads(line)) >= set(HOOKDATA_REQUIRED)


def test_views_are_private_files(seeded: Path) -> None:
    for path in (seeded / "sessions").rglob("*"):
        mode = path.stat().st_mode & 0o777
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))


# --- help --------------------------------------------------------------------------------


def subcommands() -> list[str]:
    parser = build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(actions) == 1
    return sorted(actions[0].choices)


def test_known_subcommands_exist() -> None:
    assert {"ingest", "status", "rebuild", "read", "run", "demo"} <= set(subcommands())


@pytest.mark.parametrize("command", [None, *subcommands()])
def test_help_exits_zero(tmp_path: Path, command: str | None) -> None:
    args = ("--help",) if command is None else (command, "--help")
    proc = run_cli(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    prog = "ctxd" if command is None else f"ctxd {command}"
    assert proc.stdout.startswith(f"usage: {prog}")
    if command is None:
        for name in subcommands():
            assert name in proc.stdout
    assert not (tmp_path / ".ctxd").exists()  # --help touches no state


def test_console_script_entry_points_name_real_functions() -> None:
    text = (REPO / "pyproject.toml").read_text()
    assert 'ctxd = "summarizer.cli.app:main"' in text
    assert 'ctxd-hook = "ctxd_hook.hook:main"' in text
    assert callable(hook.main)


def test_fixtures_are_valid_hook_payloads() -> None:
    """The committed fixtures are compact hook payloads, one per line (guards hand edits)."""
    paths = sorted(DATA.glob("*/events.jsonl"))
    assert len(paths) == 3
    for path in paths:
        for line in path.read_bytes().splitlines():
            record = json.loads(line)
            assert record["session_id"] and record["hook_event_name"]
            assert b"\n" not in line


def test_duplicate_deliveries_change_nothing(state_dir: Path) -> None:
    """Every tool payload delivered twice: no new entry, same agents, same views, same reads."""
    feed(state_dir, "session-with-agents")
    assert run_cli("ingest", state_dir=state_dir).returncode == 0
    agents_sql = (
        "SELECT session_id, agent_id, agent_type, cc_agent_id, tool_use_id, status FROM agents"
        " ORDER BY 1, 2"
    )
    before = (
        query(state_dir, agents_sql),
        query(state_dir, "SELECT * FROM agent_aliases ORDER BY 1, 2"),
    )
    views_before = view_files(state_dir)
    read_before = read_json(state_dir, "--agent-id", "arch-001")
    again = [line for line in fixture_lines("session-with-agents") if b'"tool_use_id"' in line]
    for line in again:
        assert run_hook(line, hook_env(state_dir)).returncode == 0
    proc = run_cli("ingest", state_dir=state_dir)
    m = INGEST_OUT.match(proc.stdout.strip())
    assert m, proc.stdout
    n = len(again)
    assert (int(m[1]), int(m[2]), int(m[4]), int(m[5])) == (0, n, n, 0)
    assert (
        query(state_dir, agents_sql),
        query(state_dir, "SELECT * FROM agent_aliases ORDER BY 1, 2"),
    ) == before
    assert {row[5] for row in before[0]} == {"completed"}
    assert view_files(state_dir) == views_before
    assert read_json(state_dir, "--agent-id", "arch-001") == read_before
