"""`ctxd forget` takes only its sessions' lines out of the spool: a rebuild from the spool (the
recovery of a damaged index) gives every other session back, and a hook appending while a
segment is rewritten loses nothing. Real spool files, the real CLI, real SQLite."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from helpers import (
    REPO,
    avoid_hour_boundary,
    hook_env,
    payload,
    poll,
    query,
    run_cli,
    run_hook,
    spool_lines,
)

from ctxd_hook import hook

GONE = "aaaa0001-gone"
KEPT = "bbbb0002-kept"
ALSO = "cccc0003-also"
HOUR_NS = 3600 * 10**9


def _event(session: str, n: int, text: str) -> bytes:
    if n % 3 == 0:
        return payload(session_id=session, hook_event_name="UserPromptSubmit", prompt=text)
    return payload(
        session_id=session,
        hook_event_name="PostToolUse",
        tool_name="Bash",
        tool_use_id=f"toolu_{session[:4]}_{n:05d}",
        tool_input={"command": f"echo {text}"},
        tool_response={"stdout": text, "stderr": "", "interrupted": False},
    )


def _append(state: Path, ts_ns: int, data: bytes, pid: int = 4242) -> None:
    spool = state / "spool"
    spool.mkdir(parents=True, exist_ok=True, mode=0o700)
    hook.append_line(str(spool), hook.segment_name(ts_ns), hook.build_line(data, ts_ns, pid))


def _entries(state: Path) -> dict[str, set[tuple[int, int, str]]]:
    rows = query(state, "SELECT session_id, ts_ns, pid, hook_event, tool_use_id, text FROM entries")
    out: dict[str, set[tuple[int, int, str]]] = {}
    for session, ts_ns, pid, event, tool_use_id, text in rows:
        out.setdefault(session, set()).add((ts_ns, pid, f"{event}:{tool_use_id}{text}"))
    return out


def _rebuild_from_spool(state: Path) -> None:
    """The README's recovery: move the index aside, then `ctxd rebuild`."""
    for suffix in ("", "-wal", "-shm"):
        path = Path(f"{state / 'index.db'}{suffix}")
        if path.exists():
            path.rename(f"{path}.damaged")
    done = run_cli("rebuild", state_dir=state)
    assert done.returncode == 0, done.stderr


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_rebuild_after_forget_gives_every_other_session_back(tmp_path: Path) -> None:
    state = tmp_path / "state"
    base = time.time_ns() - 2 * HOUR_NS  # two finished hours, three sessions interleaved
    for n in range(600):
        session = (GONE, KEPT, ALSO)[n % 3]
        _append(state, base + n * 10**10, _event(session, n, f"phrase-{session[:4]}-{n}"))
    # And one event through the real hook, in the current hour.
    assert run_hook(_event(KEPT, 9999, "through-the-hook"), hook_env(state)).returncode == 0
    _ok(run_cli("ingest", state_dir=state))
    before = _entries(state)
    assert len(before[KEPT]) == 201 and len(before[ALSO]) == 200 and len(before[GONE]) == 200

    out = _ok(run_cli("forget", GONE, state_dir=state))
    lines = spool_lines(state)
    assert not [x for x in lines if GONE.encode() in x]
    assert len(lines) == 401
    # The index stays level with the rewritten segments: nothing to read again, no anomaly.
    status = json.loads(_ok(run_cli("status", "--json", state_dir=state)))
    assert status["lag"] == {"bytes": 0, "lines": 0} and status["anomalies"] == {}
    again = _ok(run_cli("ingest", state_dir=state))
    assert again.startswith("indexed 0 entries from 0 lines")

    _rebuild_from_spool(state)
    after = _entries(state)
    assert set(after) == {KEPT, ALSO}
    assert after[KEPT] == before[KEPT] and after[ALSO] == before[ALSO]
    read = _ok(run_cli("read", "--agent-id", "main", "--session", KEPT, state_dir=state))
    assert "through-the-hook" in read
    assert out.startswith("forgot 1 sessions: ")
    assert re.search(r" and 200 spool lines deleted \([23] segments rewritten, 0 deleted\)$", out)


def test_forget_before_a_date_keeps_a_session_that_went_on(tmp_path: Path) -> None:
    state = tmp_path / "state"
    old = time.time_ns() - 40 * 24 * HOUR_NS
    _append(state, old, _event(GONE, 0, "ancient-phrase of a finished session"))
    _append(state, old + 10**9, _event(KEPT, 0, "early-phrase of a session still going"))
    _append(state, old + 2 * 10**9, b'{"session_id": "unreadable-phrase", oops')  # quarantined
    _append(state, time.time_ns() - HOUR_NS, _event(KEPT, 3, "recent-phrase of that session"))
    _ok(run_cli("ingest", state_dir=state))
    day = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 10 * 86400))
    out = _ok(run_cli("forget", "--before", day, state_dir=state))
    assert out.startswith("forgot 1 sessions")
    spool = b"\n".join(spool_lines(state))
    assert b"ancient-phrase" not in spool and b"early-phrase" in spool
    assert b"unreadable-phrase" not in spool
    _rebuild_from_spool(state)
    texts = sorted(t for _, _, t in _entries(state)[KEPT])
    assert texts == [
        "UserPromptSubmit:early-phrase of a session still going",
        "UserPromptSubmit:recent-phrase of that session",
    ]


def test_a_segment_of_the_forgotten_session_alone_is_deleted(tmp_path: Path) -> None:
    state = tmp_path / "state"
    old = time.time_ns() - 5 * HOUR_NS
    _append(state, old, _event(GONE, 0, "alone in its hour"))
    _append(state, old + HOUR_NS, _event(KEPT, 0, "the next hour"))
    _ok(run_cli("ingest", state_dir=state))
    out = _ok(run_cli("forget", GONE, state_dir=state))
    assert "1 spool lines deleted (0 segments rewritten, 1 deleted)" in out
    assert [p.name for p in sorted((state / "spool").iterdir())] == [
        hook.segment_name(old + HOUR_NS)
    ]


def test_a_line_that_only_mentions_the_session_stays(tmp_path: Path) -> None:
    """Another session's prompt that names the forgotten id is that session's event."""
    state = tmp_path / "state"
    ts = time.time_ns() - 3 * HOUR_NS
    _append(state, ts, _event(GONE, 0, "hello"))
    _append(state, ts + 10**9, _event(KEPT, 0, f'please run ctxd forget "{GONE}" for me'))
    _ok(run_cli("ingest", state_dir=state))
    _ok(run_cli("forget", GONE, state_dir=state))
    [line] = spool_lines(state)
    assert json.loads(line)["event"]["session_id"] == KEPT


_WRITER = """
import os, sys, time
sys.path.insert(0, sys.argv[1])
from ctxd_hook import hook
spool, stop, record = sys.argv[2], sys.argv[3], sys.argv[4]
n = 0
with open(record, "w") as out:
    while not os.path.exists(stop) or n < 200:
        data = ('{"session_id":"%s","hook_event_name":"UserPromptSubmit","prompt":"live-%d"}'
                % (sys.argv[5], n)).encode()
        ts = time.time_ns()
        hook.append_line(spool, hook.segment_name(ts), hook.build_line(data, ts, os.getpid()))
        out.write("live-%d\\n" % n)
        out.flush()
        n += 1
"""


def test_hooks_appending_while_the_segment_is_rewritten_lose_nothing(tmp_path: Path) -> None:
    avoid_hour_boundary(120)
    state = tmp_path / "state"
    now = time.time_ns()
    for n in range(3000):  # a large current-hour segment, so that the rewrite takes a while
        _append(state, now - 10**6 * (3000 - n), _event((GONE, KEPT)[n % 2], n, "x" * 200))
    _ok(run_cli("ingest", state_dir=state))
    stop, record = tmp_path / "stop", tmp_path / "written.txt"
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _WRITER,
            str(REPO),
            str(state / "spool"),
            str(stop),
            str(record),
            ALSO,
        ]
    )
    try:
        poll(lambda: record.exists() and record.stat().st_size > 0, timeout=30)
        out = _ok(run_cli("forget", GONE, state_dir=state))
        assert "1500 spool lines deleted (1 segments rewritten" in out
        stop.touch()
        assert writer.wait(timeout=60) == 0
    finally:
        stop.touch()
        writer.wait(timeout=60)
    written = record.read_text().split()
    assert len(written) >= 200
    ingest = _ok(run_cli("ingest", state_dir=state))
    assert "; 0 duplicates, 0 quarantined, 0 anomalies" in ingest
    texts = [t for (t,) in query(state, "SELECT text FROM entries WHERE session_id=?", (ALSO,))]
    assert sorted(texts) == sorted(written)  # every append is indexed, once
    assert query(state, "SELECT count(*) FROM entries WHERE session_id=?", (GONE,)) == [(0,)]
    assert len([x for x in spool_lines(state) if ALSO.encode() in x]) == len(written)
    assert os.listdir(state / "spool") == [hook.segment_name(now)]  # no temporary file left
