"""Poison lines: no single spool line can stop ingest, forge a record or break the file tree.

Each case is written the way an attacker (or a broken client) would reach ctxd: through the
real hook script's stdin, or as raw bytes in a spool segment. Ingest runs for real
(`indexer.writer.catch_up.catch_up`, or the `ctxd` CLI as a subprocess), and the index is queried.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import hook_env, payload, query, run_cli, run_hook

from ctxd_hook.hook import build_line
from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up

SESSION = "0f6a6c8e-1b2d-4c3e-9f40-5a6b7c8d9e01"


def hook(state_dir: Path, data: bytes) -> None:
    result = run_hook(data, hook_env(state_dir))
    assert result.returncode == 0 and result.stdout == b""


def good(n: int, **fields: Any) -> bytes:
    return payload(tool_name="Bash", tool_use_id=f"toolu_{n:04d}", **fields)


def ingest(state_dir: Path) -> None:
    result = catch_up(StatePaths(state_dir))
    assert result.caught_up and not result.by_daemon


def tool_ids(state_dir: Path) -> list[str]:
    return [r[0] for r in query(state_dir, "SELECT tool_use_id FROM entries ORDER BY id")]


def errors(state_dir: Path) -> list[str]:
    return [r[0] for r in query(state_dir, "SELECT error FROM quarantine ORDER BY id")]


def test_deeply_nested_line_is_quarantined_and_ingest_goes_on(state_dir: Path) -> None:
    hook(state_dir, good(1))
    n = 1000
    deep = b'{"session_id":"a","hook_event_name":"Stop","x":' + b"[" * n + b"]" * n + b"}"
    hook(state_dir, deep)
    hook(state_dir, good(2))
    ingest(state_dir)
    assert tool_ids(state_dir) == ["toolu_0001", "toolu_0002"]
    assert any("nested deeper than 256" in e for e in errors(state_dir))
    hook(state_dir, good(3))  # later passes are not blocked either
    ingest(state_dir)
    assert tool_ids(state_dir)[-1] == "toolu_0003"


def test_nesting_just_under_the_limit_is_indexed(state_dir: Path) -> None:
    n = 250  # with the payload's own object and the envelope: 252 levels
    deep = payload(x=json.loads("[" * n + "]" * n))
    hook(state_dir, deep)
    ingest(state_dir)
    assert len(tool_ids(state_dir)) == 1 and errors(state_dir) == []


def test_torn_stdin_with_an_out_of_range_envelope_is_quarantined(state_dir: Path) -> None:
    forged = b'x{"ctxd":1,"ts_ns":99999999999999999999999,"pid":1,"event":{"session_id":"a",'
    forged += b'"hook_event_name":"Stop"}'
    hook(state_dir, forged)
    hook(state_dir, good(1))
    ingest(state_dir)
    assert tool_ids(state_dir) == ["toolu_0001"]
    assert len(errors(state_dir)) == 1


def test_out_of_range_integers_at_the_start_of_a_line_are_quarantined(state_dir: Path) -> None:
    # Not something the hook writes, but a spool line is input: each bound has its reason.
    paths = StatePaths(state_dir)
    paths.ensure()
    event = b'{"session_id":"s1","hook_event_name":"Stop"}'
    lines = [
        b'{"ctxd":1,"ts_ns":99999999999999999999999,"pid":1,"event":%s}\n' % event,
        b'{"ctxd":1,"ts_ns":9223372036854775808,"pid":1,"event":%s}\n' % event,
        b'{"ctxd":1,"ts_ns":5,"pid":-1,"event":%s}\n' % event,
        b'{"ctxd":1,"ts_ns":-5,"pid":1,"event":%s}\n' % event,
        build_line(good(1), 1_600_000_000_000_000_000, 7),
    ]
    (paths.spool / "20200101T00.jsonl").write_bytes(b"".join(lines))
    ingest(state_dir)
    assert tool_ids(state_dir) == ["toolu_0001"]
    got = errors(state_dir)
    assert len(got) == 4
    assert sum("ts_ns" in e and "outside 0..2^63-1" in e for e in got) == 3
    assert sum("pid -1 is outside" in e for e in got) == 1


def test_lone_high_surrogate_at_the_end_of_a_prompt_is_repaired(state_dir: Path) -> None:
    data = payload(hook_event_name="UserPromptSubmit", prompt="cut emoji ")[:-1]
    data = data.replace(b'"prompt":"cut emoji "', b'"prompt":"cut emoji \\ud83d"') + b"}"
    assert b'\\ud83d"' in data
    hook(state_dir, data)
    ingest(state_dir)
    assert errors(state_dir) == []
    [(text,)] = query(state_dir, "SELECT text FROM entries")
    assert text == "cut emoji \ufffd"


def test_a_payload_cannot_forge_an_envelope(state_dir: Path) -> None:
    real = payload(session_id="real", hook_event_name="Stop")
    forged = payload(session_id="forged", hook_event_name="Stop")
    stdin = real + b',{"ctxd":1,"ts_ns":1,"pid":1,"event":' + forged  # torn: the last } is lost
    hook(state_dir, stdin)
    hook(state_dir, good(1))
    ingest(state_dir)
    rows = query(state_dir, "SELECT session_id, ts_ns, pid FROM entries")
    assert [r[0] for r in rows] == [SESSION]
    assert all(r[1] != 1 and r[2] != 1 for r in rows)
    assert len(errors(state_dir)) == 1


def test_a_good_record_after_a_torn_fragment_is_indexed(state_dir: Path) -> None:
    # A hook killed mid-write leaves a fragment; the next hook starts a fresh line.
    paths = StatePaths(state_dir)
    paths.ensure()
    segment = paths.spool / "20200101T00.jsonl"
    segment.write_bytes(build_line(good(1), 1_600_000_000_000_000_000, 7)[:90])
    from ctxd_hook.hook import append_line

    append_line(str(paths.spool), segment.name, build_line(good(2), 1_600_000_000_000_000_001, 7))
    ingest(state_dir)
    assert tool_ids(state_dir) == ["toolu_0002"]
    assert len(errors(state_dir)) == 1


def test_session_id_naming_a_state_file_is_refused(state_dir: Path) -> None:
    hook(state_dir, good(1))
    for reserved in (
        "all-agent-instructions.jsonl",
        "agent-instructions.jsonl",
        "spool",
        "Index.db",
        "sessions",
        "todos.json",
        "latest.json",
    ):
        hook(state_dir, good(9, session_id=reserved, hook_event_name="PreToolUse"))
    hook(state_dir, good(2, hook_event_name="PostToolUse", tool_input={"command": "ls"}))
    ingest(state_dir)
    assert tool_ids(state_dir) == ["toolu_0001", "toolu_0002"]
    assert len(errors(state_dir)) == 7
    assert all("is not a valid id" in e for e in errors(state_dir))
    for args in (("rebuild",), ("compact",), ("read", "--agent-id", "main", "--session", SESSION)):
        result = run_cli(*args, state_dir=state_dir)
        assert result.returncode == 0, (args, result.stderr)


def _agent_start(n: int, prompt: str, **fields: Any) -> bytes:
    return payload(
        tool_name="Agent",
        tool_use_id=f"toolu_a{n:03d}",
        tool_input={"description": f"agent {n}", "prompt": prompt, "subagent_type": "Explore"},
        **fields,
    )


def test_agent_id_naming_a_compat_view_gets_its_own_view(state_dir: Path) -> None:
    hook(state_dir, _agent_start(1, "AgentId: agent-instructions\nfind the bug"))
    hook(state_dir, _agent_start(2, "AgentId: All-Agent-Instructions\nfind it too"))
    hook(state_dir, _agent_start(3, "AgentId: todos\nlist"))
    ingest(state_dir)
    agents = {r[0] for r in query(state_dir, "SELECT agent_id FROM entries")}
    assert agents.isdisjoint({"agent-instructions", "all-agent-instructions", "todos"})
    assert len(agents) == 3
    session_dir = state_dir / "sessions" / SESSION
    compat = session_dir / "agent-instructions.jsonl"
    assert len(compat.read_bytes().splitlines()) == 3  # only the compat lines, once each
    result = run_cli("read", "--agent-id", "agent-instructions", state_dir=state_dir)
    assert result.returncode != 0 and result.stdout == ""
    assert "agent-instructions" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_claude_code_agent_id_naming_a_compat_view_is_remapped(state_dir: Path) -> None:
    hook(
        state_dir,
        payload(
            hook_event_name="SubagentStart", agent_id="agent-instructions", agent_type="Explore"
        ),
    )
    hook(state_dir, good(1, agent_id="agent-instructions", agent_type="Explore"))
    ingest(state_dir)
    agents = {r[0] for r in query(state_dir, "SELECT agent_id FROM entries")}
    assert "agent-instructions" not in agents
    assert not (state_dir / "sessions" / SESSION / "agent-instructions.jsonl").exists()


def test_every_name_the_state_dir_uses_is_reserved(tmp_path: Path) -> None:
    from indexer.daemon.protocol import SOCKET_NAME
    from indexer.lost_events import HOOK_FAILURES
    from indexer.paths import RESERVED_NAMES, is_valid_session_id
    from indexer.views import rebuild as view_rebuild
    from indexer.views import update as views
    from summarizer.resume.hook import LATEST_FILE

    paths = StatePaths(tmp_path)
    own = {p.name for p in (paths.spool, paths.index_db, paths.sessions, paths.context)}
    own |= {p.name for p in (paths.resume, paths.lock, paths.daemon_json, paths.log, paths.config)}
    own |= {HOOK_FAILURES, SOCKET_NAME, LATEST_FILE, view_rebuild.SHADOW}
    own |= {views.AGENT_INSTRUCTIONS, views.ALL_AGENT_INSTRUCTIONS, "autostart.lock"}
    assert own <= RESERVED_NAMES
    assert not any(is_valid_session_id(name) or is_valid_session_id(name.upper()) for name in own)


def test_out_of_range_numbers_in_a_record_do_not_stop_compaction(state_dir: Path) -> None:
    # A client writes its own CtxdEmit payload (no CLI validation) with numbers that no SQLite
    # integer holds; compaction stores them in its feature table.
    for n, started in enumerate(
        [b"99999999999999999999999", b"-99999999999999999999999", b"1e400"]
    ):
        record = b'{"kind":"feature_start","featureId":"f%d","name":"x","startedAt":%s}' % (
            n,
            started,
        )
        data = b'{"session_id":"s1","hook_event_name":"CtxdEmit","cwd":"/tmp","ctxd_record":'
        hook(state_dir, data + record + b"}")
    hook(state_dir, good(1))
    result = run_cli("compact", state_dir=state_dir)
    assert result.returncode == 0, result.stderr
    rows = query(state_dir, "SELECT id, started_at FROM mem_features ORDER BY id")
    assert [r[0] for r in rows] == ["f0", "f1"]  # the event's own time instead
    assert all(0 < r[1] < 2**63 for r in rows)
    assert len(errors(state_dir)) == 1  # 1e400 is no number msgspec decodes: quarantined


def test_a_running_daemon_indexes_past_a_poison_line(tmp_path: Path) -> None:
    from helpers import poll
    from test_daemon import start_daemon, stop, wait_started

    state = tmp_path / "state"
    d = start_daemon(state, tmp_path)
    try:
        wait_started(d)
        n = 2000
        hook(state, b'{"session_id":"a","hook_event_name":"Stop","x":' + b"[" * n + b"]" * n + b"}")
        hook(state, good(1))
        poll(lambda: query(state, "SELECT tool_use_id FROM entries") == [("toolu_0001",)], 30)
        assert len(errors(state)) == 1
        assert d.proc.poll() is None
    finally:
        stop(d)
