"""Spool and quarantine hygiene: redacted, capped quarantine; retention without a daemon; forget."""

from __future__ import annotations

import itertools
import json
import os
import time
from pathlib import Path

from helpers import run_cli

from ctxd_hook import hook
from indexer.config import Config, RetentionConfig
from indexer.index import store
from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up, open_writer, writer_lock

HOUR_NS = 3600 * 1_000_000_000
_SEQ = itertools.count(1)
SECRET = "ghp_" + "Q8vN2kLm5pR7sT9wX1yZ3aB4cD6eF0gH2jK4"


def _line(state: Path, ts_ns: int, session: str, text: str = "hello") -> Path:
    spool = state / "spool"
    spool.mkdir(parents=True, exist_ok=True, mode=0o700)
    payload = json.dumps(
        {"session_id": session, "hook_event_name": "UserPromptSubmit", "cwd": "/p", "prompt": text}
    ).encode()
    line = hook.build_line(payload, ts_ns + next(_SEQ), 7)
    hook.append_line(str(spool), hook.segment_name(ts_ns), line)
    return spool / hook.segment_name(ts_ns)


def _age(path: Path, hours: float) -> None:
    t = time.time() - hours * 3600
    os.utime(path, (t, t))


def _quarantine(state: Path) -> list[tuple[bytes, int]]:
    conn = store.connect(state / "index.db", readonly=True)
    try:
        return [(bytes(r[0]), int(r[1])) for r in conn.execute("SELECT raw, ts_ns FROM quarantine")]
    finally:
        conn.close()


def test_quarantined_line_is_redacted_and_capped(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _line(state, time.time_ns(), "s1")
    # A bad line: 200 KiB of JSON that is no event, the secret escaped inside it.
    escaped = SECRET.replace("_", "\\u005f")
    bad = b'{"ctxd":1,"ts_ns":5,"pid":1,"event":{"prompt":"' + escaped.encode() + b" " * 200_000
    with (state / "spool" / hook.segment_name(time.time_ns())).open("ab") as f:
        f.write(bad + b"\n")
    catch_up(StatePaths(state))
    rows = _quarantine(state)
    assert len(rows) == 1
    raw = rows[0][0]
    assert len(raw) <= 4096 * 4
    assert b"[REDACTED:" in raw
    assert SECRET[4:].encode() not in raw and escaped[9:].encode() not in raw


def test_retention_runs_without_a_daemon_and_keeps_what_is_not_indexed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    now = time.time_ns()
    old = _line(state, now - 100 * HOUR_NS, "s-old", f"token {SECRET}")
    recent = _line(state, now - 2 * HOUR_NS, "s-new")
    unindexed = state / "spool" / "20200101T00.jsonl"
    unindexed.write_bytes(b'{"ctxd":1,"ts_ns":1,"pid":1,"event":{"session_id":"x"')  # partial
    for path, hours in ((old, 100), (recent, 2), (unindexed, 200)):
        _age(path, hours)
    r = run_cli("ingest", state_dir=state)  # no daemon runs: the command itself prunes
    assert r.returncode == 0, r.stderr
    assert not old.exists() and recent.exists() and unindexed.exists()
    spool_bytes = b"".join(p.read_bytes() for p in (state / "spool").iterdir())
    assert SECRET.encode() not in spool_bytes


def test_retention_runs_at_most_once_per_interval(tmp_path: Path) -> None:
    state = tmp_path / "state"
    paths = StatePaths(state)
    now = time.time_ns()
    _line(state, now - 2 * HOUR_NS, "s1")
    catch_up(paths)  # the first catch-up runs retention and records when
    old = _line(state, now - 100 * HOUR_NS, "s-old")
    _age(old, 100)
    catch_up(paths)
    assert old.exists()  # within [retention] interval_s of the last run
    with writer_lock(paths):
        writer = open_writer(paths, Config())
        try:
            writer.prune(now=time.time() + 3601)
        finally:
            writer.close()
    assert not old.exists()


def test_quarantine_expires_with_retention(tmp_path: Path) -> None:
    state = tmp_path / "state"
    paths = StatePaths(state)
    seg = _line(state, time.time_ns(), "s1")
    with seg.open("ab") as f:
        f.write(b"not json at all\n")
    catch_up(paths)
    assert len(_quarantine(state)) == 1
    config = Config(retention=RetentionConfig(quarantine_days=1.0))
    with writer_lock(paths):
        writer = open_writer(paths, config)
        try:
            writer.prune(now=time.time() + 86400 + 3700)
        finally:
            writer.close()
    assert _quarantine(state) == []


def _strings(state: Path) -> bytes:
    """Every byte ctxd keeps outside the spool and the spool too (index.db, -wal, free pages)."""
    return b"".join(p.read_bytes() for p in state.rglob("*") if p.is_file())


def test_forget_session_deletes_it_everywhere(tmp_path: Path) -> None:
    state = tmp_path / "state"
    now = time.time_ns()
    for i in range(30):
        _line(state, now, "gone-session", f"forgettable-phrase-{i} about the billing module")
        _line(state, now, "kept-session", f"keepable-phrase-{i} about the search module")
    assert run_cli("ingest", state_dir=state).returncode == 0
    assert run_cli("compact", state_dir=state).returncode == 0
    assert b"forgettable-phrase-7" in _strings(state)
    r = run_cli("forget", "gone-session", state_dir=state)
    assert r.returncode == 0, r.stderr
    assert "forgot 1 sessions" in r.stdout
    blob = b"".join(p.read_bytes() for p in state.rglob("*") if p.is_file() and "spool" not in p.parts)
    assert b"forgettable-phrase" not in blob  # index.db, its WAL and free pages, views, memory
    assert b"keepable-phrase-7" in blob
    assert not (state / "sessions" / "gone-session").exists()
    # The spool segment held both sessions: it was indexed, so it went whole.
    assert b"forgettable-phrase" not in b"".join(p.read_bytes() for p in (state / "spool").iterdir())
    out = run_cli("read", "--agent-id", "main", "--session", "kept-session", state_dir=state)
    assert "keepable-phrase-29" in out.stdout


def test_forget_before_a_date(tmp_path: Path) -> None:
    state = tmp_path / "state"
    old_ns = time.time_ns() - 40 * 24 * HOUR_NS
    old = _line(state, old_ns, "old-session", "ancient-phrase in the old session")
    _line(state, time.time_ns(), "new-session", "fresh-phrase in the new session")
    assert run_cli("ingest", state_dir=state).returncode == 0
    day = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 10 * 86400))
    r = run_cli("forget", "--before", day, state_dir=state)
    assert r.returncode == 0, r.stderr
    assert not old.exists()
    blob = _strings(state)
    assert b"ancient-phrase" not in blob and b"fresh-phrase" in blob


def test_forget_bad_input_is_one_line(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _line(state, time.time_ns(), "s1")
    assert run_cli("ingest", state_dir=state).returncode == 0
    for args in (("forget",), ("forget", "--before", "last tuesday"), ("forget", "../etc")):
        r = run_cli(*args, state_dir=state)
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
