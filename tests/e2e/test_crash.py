"""The issue's crash criterion: SIGKILL the indexer at random moments, restart, repeat (I3, I4, I6).

A spool of corpus-shaped events (several sessions, subagents, 0.3-3 KB payloads, every
(tool_use_id, hook_event_name) unique so that counts are exact) is fed to `ctxd ingest` and
`ctxd run` subprocesses that are killed with SIGKILL after a random delay drawn over the
measured ingest duration, then restarted; a final uninterrupted `ctxd ingest` finishes. Then:

- the source positions (segment, offset) of `entries` ∪ `quarantine` are exactly the start
  offsets of the spool's lines, each once, and there is one entry per event written;
- every view file holds each of its entries exactly once (compared by `seq` with the index).

A second test kills a *hook* in the middle of an 8 MB record and checks that the torn fragment
is quarantined and the records after it are indexed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agent_spool import BASE_TS_NS, WORDS
from helpers import HOOK_CMD, REPO, hook_env, run_cli

from ctxd_hook.hook import append_line, build_line, segment_name
from indexer.index import store
from indexer.paths import StatePaths
from indexer.views import update as views

# --- a corpus-shaped spool -----------------------------------------------------------------


@dataclass
class Spool:
    """The events to write, as (segment name, spool line) pairs, and what they must become."""

    lines: list[tuple[str, bytes]] = field(default_factory=list)
    keys: set[tuple[str, str, str]] = field(default_factory=set)  # (session, tool_use_id, hook)


def _text(rng: random.Random, size: int) -> str:
    words: list[str] = []
    total = 0
    while total < size:
        w = rng.choice(WORDS)
        words.append(w)
        total += len(w) + 1
    return " ".join(words)


def generate(n: int, seed: int) -> Spool:
    """`n` events over 4 sessions and 3 hour segments, with sequential subagents."""
    rng = random.Random(seed)
    sessions = [f"5e55{i:04x}-1b2d-4c3e-9f40-5a6b7c8d{i:04x}" for i in range(4)]
    agent_state: dict[str, tuple[str, str, str] | None] = dict.fromkeys(sessions)
    agent_count: dict[str, int] = defaultdict(int)
    out = Spool()
    call = 0
    step_ns = 3 * 3600 * 10**9 // n  # spread over three hour segments

    def emit(p: dict[str, Any]) -> None:
        ts = BASE_TS_NS + len(out.lines) * step_ns + rng.randrange(step_ns // 2)
        pid = rng.randrange(1000, 60000)
        data = json.dumps(p, separators=(",", ":"), ensure_ascii=False).encode()
        out.lines.append((segment_name(ts), build_line(data, ts, pid)))
        if p.get("tool_use_id"):
            key = (p["session_id"], p["tool_use_id"], p["hook_event_name"])
            assert key not in out.keys
            out.keys.add(key)

    while len(out.lines) < n:
        sid = rng.choice(sessions)
        common = {
            "session_id": sid,
            "transcript_path": f"/home/dev/.claude/projects/-home-dev-app/{sid}.jsonl",
            "cwd": "/home/dev/app",
            "permission_mode": "default",
        }
        agent = agent_state[sid]
        roll = rng.random()
        if agent is None and roll < 0.03:
            agent_count[sid] += 1
            name = f"worker-{agent_count[sid]}"
            call += 1
            tuid = f"toolu_{call:08d}"
            agent_state[sid] = (name, f"cc{agent_count[sid]:03d}{sid[:4]}", tuid)
            emit(
                {
                    **common,
                    "hook_event_name": "PreToolUse",
                    "tool_name": "Task",
                    "tool_use_id": tuid,
                    "tool_input": {
                        "description": f"Task {name}",
                        "subagent_type": "the-developer",
                        "prompt": f"AgentId: {name}\n" + _text(rng, rng.randrange(200, 1500)),
                    },
                }
            )
            continue
        if agent is not None and roll < 0.04:
            name, cc, tuid = agent
            emit(
                {
                    **common,
                    "hook_event_name": "SubagentStop",
                    "agent_id": cc,
                    "agent_type": "the-developer",
                    "last_assistant_message": _text(rng, 300),
                }
            )
            emit(
                {
                    **common,
                    "hook_event_name": "PostToolUse",
                    "tool_name": "Task",
                    "tool_use_id": tuid,
                    "tool_input": {
                        "description": f"Task {name}",
                        "subagent_type": "the-developer",
                        "prompt": f"AgentId: {name}\nwork",
                    },
                    "tool_response": {
                        "status": "completed",
                        "agentId": cc,
                        "content": [{"type": "text", "text": _text(rng, rng.randrange(300, 2000))}],
                    },
                }
            )
            agent_state[sid] = None
            continue
        if roll < 0.08:
            emit(
                {
                    **common,
                    "hook_event_name": "UserPromptSubmit",
                    "prompt": _text(rng, rng.randrange(50, 800)),
                }
            )
            continue
        inside = (
            {"agent_id": agent[1], "agent_type": "the-developer"}
            if agent and rng.random() < 0.8
            else {}
        )
        call += 1
        tuid = f"toolu_{call:08d}"
        tool = rng.choice(["Bash", "Read", "Edit", "Grep"])
        path = f"/home/dev/app/src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
        tool_input: dict[str, Any] = {
            "Bash": {
                "command": f"pytest -q tests/test_{rng.choice(WORDS)}.py",
                "description": "Run tests",
            },
            "Read": {"file_path": path},
            "Edit": {
                "file_path": path,
                "old_string": _text(rng, 80),
                "new_string": _text(rng, 120),
            },
            "Grep": {
                "pattern": rng.choice(WORDS),
                "path": "/home/dev/app",
                "output_mode": "content",
            },
        }[tool]
        emit(
            {
                **common,
                **inside,
                "hook_event_name": "PreToolUse",
                "tool_name": tool,
                "tool_use_id": tuid,
                "tool_input": tool_input,
            }
        )
        if len(out.lines) >= n:
            break
        size = rng.randrange(100, 2600)
        response: dict[str, Any] = (
            {"stdout": _text(rng, size), "stderr": "", "interrupted": False}
            if tool == "Bash"
            else {"type": "text", "file": {"filePath": path, "content": _text(rng, size)}}
        )
        emit(
            {
                **common,
                **inside,
                "hook_event_name": "PostToolUse",
                "tool_name": tool,
                "tool_use_id": tuid,
                "tool_input": tool_input,
                "tool_response": response,
            }
        )
    return out


def append(paths: StatePaths, lines: list[tuple[str, bytes]]) -> None:
    """Append with the hook's own function (flock, one write per line)."""
    spool = str(paths.spool)
    for name, data in lines:
        append_line(spool, name, data)


# --- running and killing the indexer --------------------------------------------------------


def _cmd(mode: str, state: Path) -> list[str]:
    return [sys.executable, "-m", "summarizer.cli.app", mode, "--state-dir", str(state)]


def _env() -> dict[str, str]:
    env = hook_env("/nonexistent")  # CTXD_HOME is overridden by --state-dir
    env["PYTHONPATH"] = str(REPO)
    return env


def run_to_end(mode: str, state: Path) -> float:
    t0 = time.monotonic()
    done = subprocess.run(
        _cmd(mode, state), env=_env(), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return time.monotonic() - t0


def indexed_count(paths: StatePaths) -> int:
    if not paths.index_db.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{paths.index_db}?mode=ro", uri=True, timeout=10)
        try:
            return int(conn.execute("SELECT count(*) FROM entries").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.OperationalError:  # killed before the schema was created
        return 0


@dataclass
class CrashReport:
    kills: int = 0
    behind: int = 0  # kills that left written events unindexed
    partial: int = 0  # kills after this run had committed some events but not all: mid-ingest
    runs: int = 0
    startup_s: float = 0.0
    per_event_s: float = 0.0
    modes: dict[str, int] = field(default_factory=lambda: defaultdict(int))


def crash_loop(state: Path, spool: Spool, kills: int, seed: int) -> CrashReport:
    """Write the spool in chunks; start and SIGKILL the indexer until `kills` kills landed.

    Kill moments, in turn: uniform over the whole expected run (start-up included); uniform
    over its ingest window (the expected duration is measured first: start-up, then the
    backlog at the measured cost per event); and once the index has grown by a random part of
    the backlog, which lands the kill inside a later batch however fast the machine is.
    """
    rng = random.Random(seed)
    paths = StatePaths(state)
    paths.ensure()
    # Small transactions: many commit points for a kill to fall between (I3).
    paths.config.write_text("[ingest]\nbatch_lines = 200\n\n[daemon]\nrescan_interval_s = 0.2\n")
    report = CrashReport()
    size = len(spool.lines) // (kills + 1) + 1
    parts = [spool.lines[i : i + size] for i in range(0, len(spool.lines), size)]
    append(paths, parts[0])
    first = run_to_end("ingest", state)
    report.startup_s = min(run_to_end("ingest", state) for _ in range(2))  # nothing to do
    report.per_event_s = max(first - report.startup_s, 0.005) / len(parts[0])
    written = len(parts[0])
    i = 0
    # Go on until the kills landed, one of them at least mid-ingest (seen in the index after
    # the kill, not guessed from timing); progress kills land there on any machine.
    while report.kills < kills or report.partial < 1:
        i += 1
        assert i < 10 * kills, f"only {report.kills} of {kills} kills landed in {i} runs"
        if i < len(parts):
            append(paths, parts[i])
            written += len(parts[i])
        before = indexed_count(paths)
        work = (written - before) * report.per_event_s
        mode = "run" if i % 4 == 0 else "ingest"
        proc = subprocess.Popen(
            _cmd(mode, state), env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        report.runs += 1
        if i % 3 == 0 and written - before > 2:
            # at least a batch (200 lines) still to go once the target is reached, if possible
            target = before + rng.randrange(1, max(2, written - before - 200))
            killed = _kill_after_progress(proc, paths, target)
        else:
            start = 0.0 if i % 3 == 1 else report.startup_s
            killed = _kill_after(proc, rng.uniform(start, report.startup_s + work))
        if killed:
            report.kills += 1
            report.modes[mode] += 1
            after = indexed_count(paths)
            report.behind += after < written
            report.partial += before < after < written
    for part in parts[i + 1 :]:  # kills may have landed before every chunk was written
        append(paths, part)
    run_to_end("ingest", state)  # the final, uninterrupted catch-up
    return report


def _kill_after(proc: subprocess.Popen[bytes], delay: float) -> bool:
    """SIGKILL `proc` after `delay` seconds unless it exited; True if it was killed."""
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True
    finally:
        _reap(proc)
    return False


def _kill_after_progress(proc: subprocess.Popen[bytes], paths: StatePaths, target: int) -> bool:
    """SIGKILL `proc` as soon as the index holds `target` entries; True if it was killed."""
    try:
        while proc.poll() is None:
            if indexed_count(paths) >= target:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                return True
            time.sleep(0.001)
        return False
    finally:
        _reap(proc)


def _reap(proc: subprocess.Popen[bytes]) -> None:
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    assert proc.returncode in (0, -signal.SIGKILL), err


# --- the checks -----------------------------------------------------------------------------


def spool_positions(spool_dir: Path) -> set[tuple[str, int]]:
    """Parse the spool ourselves: the start offset of every line of every segment."""
    out: set[tuple[str, int]] = set()
    for path in sorted(spool_dir.glob("*.jsonl")):
        data = path.read_bytes()
        assert data.endswith(b"\n"), path
        pos = 0
        while (end := data.find(b"\n", pos)) >= 0:
            out.add((path.name, pos))
            pos = end + 1
    return out


def check_exactly_once(paths: StatePaths, spool: Spool) -> None:
    lines = spool_positions(paths.spool)
    assert len(lines) == len(spool.lines)
    conn = sqlite3.connect(f"file:{paths.index_db}?mode=ro", uri=True)
    try:
        entries = conn.execute(
            "SELECT f.name, e.offset FROM entries e JOIN files f USING(file_id)"
        ).fetchall()
        quarantined = conn.execute("SELECT name, offset FROM quarantine").fetchall()
        keys = conn.execute(
            "SELECT session_id, tool_use_id, hook_event FROM entries WHERE tool_use_id<>''"
        ).fetchall()
        generations = conn.execute("SELECT name, count(*) FROM files GROUP BY name").fetchall()
        anomalies = conn.execute(
            "SELECT key, value FROM meta WHERE key LIKE 'anomaly.%'"
        ).fetchall()
    finally:
        conn.close()
    positions = [tuple(r) for r in entries] + [tuple(r) for r in quarantined]
    assert len(positions) == len(set(positions)), "a source position was indexed twice"
    assert set(positions) == lines, (
        f"missing {sorted(lines - set(positions))[:5]}, extra {sorted(set(positions) - lines)[:5]}"
    )
    assert quarantined == []  # every line written here is well-formed
    assert len(entries) == len(spool.lines)
    assert {tuple(k) for k in keys} == spool.keys
    assert all(n == 1 for _, n in generations), generations  # no false anomaly
    assert anomalies == []


def check_views(paths: StatePaths) -> None:
    """Every view file holds exactly the seqs the index assigns to it, each once, ascending."""
    conn = sqlite3.connect(f"file:{paths.index_db}?mode=ro", uri=True)
    try:
        expected: dict[Path, set[int]] = defaultdict(set)
        for se in store.entries_after(conn, 0, 1 << 30):
            for path in views.view_files(paths, se.entry):
                expected[path].add(se.id)
    finally:
        conn.close()
    files = [*paths.sessions.glob("*/*.jsonl"), paths.sessions / views.ALL_AGENT_INSTRUCTIONS]
    actual = {
        p: [json.loads(x)["seq"] for x in p.read_bytes().splitlines()] for p in files if p.exists()
    }
    for path, seqs in actual.items():
        assert len(seqs) == len(set(seqs)), f"{path.name}: an entry appears twice"
        assert seqs == sorted(seqs), f"{path.name}: seq not ascending"
        assert path.read_bytes().endswith(b"\n") or not seqs
    assert {p: set(s) for p, s in actual.items() if s} == dict(expected)


def _crash_test(tmp_path: Path, events: int, kills: int, seed: int) -> None:
    t0 = time.monotonic()
    spool = generate(events, seed)
    state = tmp_path / "state"
    report = crash_loop(state, spool, kills, seed)
    paths = StatePaths(state)
    check_exactly_once(paths, spool)
    check_views(paths)
    print(
        f"\ncrash test: {events} events, {report.kills} kills in {report.runs} runs "
        f"({dict(report.modes)}), {report.behind} left the index behind, "
        f"{report.partial} after a partial commit; "
        f"start-up {report.startup_s:.2f} s, first chunk {report.per_event_s * 1e6:.0f} µs/event; "
        f"total {time.monotonic() - t0:.1f} s"
    )
    # Where the timed kills landed depends on the machine's speed: reported above, not
    # asserted; crash_loop itself goes on until a kill landed mid-ingest.
    assert report.kills >= kills and report.partial >= 1


def test_sigkill_during_ingest_quick(tmp_path: Path) -> None:
    _crash_test(tmp_path, events=3000, kills=6, seed=1)


@pytest.mark.full
def test_sigkill_during_ingest_full(tmp_path: Path) -> None:
    _crash_test(tmp_path, events=30_000, kills=40, seed=2)


# --- a hook killed in the middle of a large record ------------------------------------------


def _kill_hook_mid_write(state: Path, record: bytes) -> bytes:
    """Run the real hook with `record`; SIGKILL it once its write has begun; return the segment."""
    spool = state / "spool"
    spool.mkdir(parents=True, exist_ok=True, mode=0o700)
    proc = subprocess.Popen(HOOK_CMD, stdin=subprocess.PIPE, env=hook_env(state))
    assert proc.stdin is not None
    proc.stdin.write(record)
    proc.stdin.close()
    while proc.poll() is None:
        with os.scandir(spool) as it:
            if any(e.stat().st_size for e in it):
                proc.send_signal(signal.SIGKILL)
                break
    proc.wait()
    [segment] = list(spool.glob("*.jsonl"))
    return segment.read_bytes()


def test_hook_killed_mid_record_leaves_a_fragment_that_is_quarantined(tmp_path: Path) -> None:
    sid = "0f6a6c8e-1b2d-4c3e-9f40-5a6b7c8d9e01"
    big = json.dumps(
        {
            "session_id": sid,
            "hook_event_name": "PostToolUse",
            "tool_name": "Read",
            "tool_use_id": "toolu_big",
            "tool_input": {"file_path": "/home/dev/app/big.log"},
            "tool_response": {"type": "text", "file": {"content": "0123456789abcdef" * (1 << 19)}},
        }
    ).encode()
    assert len(big) > 8 << 20
    for attempt in range(25):
        state = tmp_path / f"attempt-{attempt}"
        data = _kill_hook_mid_write(state, big)
        if data and not data.endswith(b"\n"):
            break
    torn = bool(data) and not data.endswith(b"\n")
    paths = StatePaths(state)
    [segment] = list(paths.spool.glob("*.jsonl"))
    if not torn:  # never torn in 25 tries (e.g. a very fast disk): the record must be whole
        assert data == b"" or data.count(b"\n") == 1
    print(f"\nhook kill: torn={torn} after {attempt + 1} attempt(s), {len(data)} bytes on disk")
    after = [
        {
            "session_id": sid,
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_use_id": f"toolu_after{n}",
            "tool_input": {"command": f"echo {n}"},
        }
        for n in range(2)
    ]
    for n, p in enumerate(after):
        line = build_line(json.dumps(p).encode(), time.time_ns() + n, 9999)
        append_line(str(paths.spool), segment.name, line)  # same segment, hook's separator rule
    if torn:
        assert segment.read_bytes()[len(data) : len(data) + 1] == b"\n"

    result = run_cli("ingest", "--state-dir", str(state))
    assert result.returncode == 0, result.stderr
    conn = sqlite3.connect(f"file:{paths.index_db}?mode=ro", uri=True)
    try:
        tools = {r[0] for r in conn.execute("SELECT tool_use_id FROM entries")}
        rows = conn.execute("SELECT name, offset, line_no, error FROM quarantine").fetchall()
    finally:
        conn.close()
    assert {"toolu_after0", "toolu_after1"} <= tools
    if torn:
        assert rows == [(segment.name, 0, 1, rows[0][3])]
        assert "not a spool envelope" in rows[0][3]
        assert "toolu_big" not in tools
    elif data:
        assert rows == [] and "toolu_big" in tools
