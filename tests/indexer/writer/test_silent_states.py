"""Silent states made loud: a lost spool segment, a damaged index page, an index deleted under
the daemon, and hook events that could not be written. Real files, processes and SQLite."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
from pathlib import Path

import pytest
from helpers import avoid_hour_boundary, hook_env, payload, poll, query, run_cli, run_hook
from test_daemon import start_daemon, stop, wait_started

from ctxd_hook.hook import append_line, build_line, segment_name
from indexer.config import Config
from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up, is_locked, open_writer, writer_lock
from summarizer.daemon.retention import prune_spool

OLD_SEGMENT = "20200101T00.jsonl"


def write_events(paths: StatePaths, name: str, first: int, count: int) -> None:
    for n in range(first, first + count):
        p = payload(tool_use_id=f"toolu_{n:05d}", tool_input={"command": f"echo {n}"})
        append_line(str(paths.spool), name, build_line(p, 1_577_836_800_000_000_000 + n, 9))


def status(state_dir: Path) -> dict[str, object]:
    result = run_cli("status", "--json", state_dir=state_dir)
    assert result.returncode == 0, result.stderr
    out: dict[str, object] = json.loads(result.stdout)
    return out


def doctor(state_dir: Path) -> dict[str, dict[str, str]]:
    result = run_cli("doctor", "--json", state_dir=state_dir)
    return {c["name"]: c for c in json.loads(result.stdout)}


def test_a_segment_deleted_before_it_was_indexed_is_an_anomaly(
    state_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    paths = StatePaths(state_dir)
    paths.ensure()
    write_events(paths, OLD_SEGMENT, 0, 5)
    catch_up(paths)
    write_events(paths, OLD_SEGMENT, 5, 5)  # never indexed
    (paths.spool / OLD_SEGMENT).unlink()
    with caplog.at_level(logging.WARNING, logger="ctxd.ingest"):
        result = catch_up(paths)
    assert result.stats.anomalies == 1
    assert any(
        "disappeared" in r.getMessage() and OLD_SEGMENT in r.getMessage() for r in caplog.records
    )
    assert status(state_dir)["anomalies"] == {"anomaly.missing": "1"}
    text = run_cli("status", state_dir=state_dir).stdout
    assert "1 spool segments vanished" in text
    check = doctor(state_dir)["spool"]
    assert check["status"] == "WARN" and "vanished" in check["detail"]


def test_segments_deleted_by_retention_or_renamed_are_not_anomalies(state_dir: Path) -> None:
    paths = StatePaths(state_dir)
    paths.ensure()
    write_events(paths, OLD_SEGMENT, 0, 5)
    write_events(paths, "20200101T01.jsonl", 5, 5)
    catch_up(paths)
    os.utime(paths.spool / OLD_SEGMENT, (0, 0))
    with writer_lock(paths):
        writer = open_writer(paths, Config())
        try:
            assert prune_spool(writer.conn, paths, 1.0).segments_deleted == [OLD_SEGMENT]
        finally:
            writer.close()
    (paths.spool / "20200101T01.jsonl").rename(paths.spool / "20200101T02.jsonl")
    result = catch_up(paths)
    assert result.stats.anomalies == 0
    assert status(state_dir)["anomalies"] == {}
    assert doctor(state_dir)["index"]["status"] == "OK"


def test_doctor_runs_quick_check_on_a_damaged_page(state_dir: Path) -> None:
    env = hook_env(state_dir)
    for n in range(400):
        text = f"output line {n} " * 40
        assert run_hook(payload(tool_use_id=f"toolu_{n:05d}", tool_input={"c": text}), env)
    assert run_cli("ingest", state_dir=state_dir).returncode == 0
    assert doctor(state_dir)["index"]["status"] == "OK"
    db = state_dir / "index.db"
    assert (
        not (state_dir / "index.db-wal").exists()
        or os.path.getsize(state_dir / "index.db-wal") == 0
    )
    pages = db.stat().st_size // 4096
    assert pages > 20
    with db.open("r+b") as f:  # a 4 KiB page in the middle, overwritten
        f.seek(pages // 2 * 4096)
        f.write(bytes(range(256)) * 16)
    result = run_cli("doctor", state_dir=state_dir)
    assert result.returncode == 1
    [line] = [x for x in result.stdout.splitlines() if x.startswith("FAIL  index")]
    assert "damaged" in line
    assert "ctxd rebuild" in result.stdout and "mv " in result.stdout


@pytest.mark.parametrize("how", ["deleted", "replaced by another file"])
def test_daemon_stops_when_its_index_is_deleted_or_replaced(tmp_path: Path, how: str) -> None:
    state = tmp_path / "state"
    d = start_daemon(state, tmp_path)
    try:
        wait_started(d)
        env = hook_env(state)
        assert run_hook(payload(tool_use_id="toolu_00001"), env).returncode == 0
        poll(lambda: query(state, "SELECT count(*) FROM entries") == [(1,)], timeout=30)
        if how == "deleted":
            for suffix in ("", "-wal", "-shm"):
                Path(f"{state / 'index.db'}{suffix}").unlink(missing_ok=True)
        else:  # a consistent copy (sqlite3 backup) renamed over it, as a restore would
            copy = tmp_path / "copy.db"
            src = sqlite3.connect(f"file:{state / 'index.db'}?mode=ro", uri=True)
            dst = sqlite3.connect(copy)
            src.backup(dst)
            src.close()
            dst.close()
            os.replace(copy, state / "index.db")
        poll(lambda: d.proc.poll() is not None, timeout=30)
        assert d.proc.returncode == 0
        log = (state / "ctxd.log").read_text()
        assert f"index.db was {how} while the daemon ran; stopping" in log
        assert not is_locked(d.paths)
        assert run_hook(payload(tool_use_id="toolu_00002"), env).returncode == 0
        assert run_cli("ingest", state_dir=state).returncode == 0
        assert query(state, "SELECT tool_use_id FROM entries ORDER BY id") == [
            ("toolu_00001",),
            ("toolu_00002",),
        ]
    finally:
        stop(d)


def test_hook_events_that_could_not_be_written_are_counted(state_dir: Path) -> None:
    avoid_hour_boundary()
    spool = state_dir / "spool"
    spool.mkdir(mode=0o700, parents=True)
    # The hook never follows a symlink: a segment that is one cannot be written.
    (spool / segment_name(time.time_ns())).symlink_to(state_dir / "elsewhere.jsonl")
    env = hook_env(state_dir)
    for n in range(3):
        result = run_hook(payload(tool_use_id=f"toolu_{n}"), env)
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert status(state_dir)["hook_failures"] == 3
    text = run_cli("status", state_dir=state_dir).stdout
    assert "3 events could not be spooled" in text
    check = doctor(state_dir)["hook writes"]
    assert check["status"] == "WARN" and "3 hook events" in check["detail"]
    assert os.stat(state_dir / "hook-failures").st_mode & 0o777 == 0o600
