"""Shipping to a real PostgreSQL: exactly once, atomic cursors, deletions, reused ids, resets."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import psycopg
import pytest
from team_helpers import indexed, local_digest, spool_events, team_config, team_digest, team_scalar

from ctxd_hook.hook import build_line
from indexer.config import Config
from indexer.paths import StatePaths
from indexer.retention import purge
from indexer.writer.catch_up import catch_up, open_writer, writer_lock
from summarizer.cli.commands.forget import forget
from summarizer.team.schema import migrate
from summarizer.team.shipper import Shipper
from summarizer.team.state import read_state

T0 = 1_767_261_600_000_000_000  # 2026-01-01T10:00Z


@pytest.fixture
def dsn(team_dsn: str) -> str:
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        migrate(conn)
    return team_dsn


def _ship(paths: StatePaths, dsn: str, config: Config | None = None, **kw: object) -> Shipper:
    shipper = Shipper(paths, config or team_config(batch_rows=300), dsn)
    try:
        shipper.ship(**kw)  # type: ignore[arg-type]
    finally:
        shipper.close()
    return shipper


def _prompts(paths: StatePaths, session: str, n: int, t0: int) -> None:
    """`n` prompts of one session appended to the spool, each a unique (ts_ns, pid)."""
    paths.ensure()
    with open(paths.spool / "20260101T10.jsonl", "ab") as f:
        for i in range(n):
            payload = {
                "session_id": session,
                "hook_event_name": "UserPromptSubmit",
                "cwd": "/home/dev/app",
                "prompt": f"step {i} of {session}: refactor the cache layer",
            }
            f.write(build_line(json.dumps(payload).encode(), t0 + i, 4242))


def test_every_entry_is_shipped_once_and_again_nothing(tmp_path: Path, dsn: str) -> None:
    paths = indexed(tmp_path / "a", 2000, seed=1)
    shipper = _ship(paths, dsn)
    assert team_digest(dsn, shipper.who.machine_id) == local_digest(paths)
    again = Shipper(paths, team_config(batch_rows=300), dsn)
    report = again.ship()
    again.close()
    assert (report.entries, report.batches) == (0, 0)
    assert team_digest(dsn, shipper.who.machine_id) == local_digest(paths)
    # The catalog came along: every session and agent of the index, under this machine.
    assert team_scalar(dsn, "SELECT count(*) FROM ctxd.sessions") == 4
    assert team_scalar(dsn, "SELECT count(DISTINCT machine_id) FROM ctxd.agents") == 1
    state = read_state(paths)
    assert state is not None and state.entry_cursor == local_digest(paths)[0]


def test_batches_are_bounded_in_rows_and_bytes(tmp_path: Path, dsn: str) -> None:
    paths = indexed(tmp_path / "a", 1000, seed=2)
    by_rows = Shipper(paths, team_config(batch_rows=100), dsn)
    assert by_rows.ship(max_batches=3).entries == 300
    by_rows.close()
    by_bytes = Shipper(paths, team_config(batch_rows=100000, batch_bytes=65536), dsn)
    report = by_bytes.ship()
    by_bytes.close()
    assert report.batches > 1 and report.entries == 700
    assert team_digest(dsn, by_bytes.who.machine_id) == local_digest(paths)


def test_a_batch_and_its_cursor_commit_together(tmp_path: Path, dsn: str) -> None:
    paths = indexed(tmp_path / "a", 1000, seed=3)
    with psycopg.connect(dsn, autocommit=True) as conn:
        # The server refuses the cursor update of the third batch: the batch must go with it.
        conn.execute(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            " IF NEW.entry_cursor > 600 THEN RAISE EXCEPTION 'disk full'; END IF;"
            " RETURN NEW; END $$"
        )
        conn.execute(
            "CREATE TRIGGER refuse BEFORE UPDATE ON ctxd.machines FOR EACH ROW"
            " EXECUTE FUNCTION refuse()"
        )
    shipper = Shipper(paths, team_config(batch_rows=300), dsn)
    with pytest.raises(Exception, match="disk full"):
        shipper.ship()
    shipper.close()
    assert team_scalar(dsn, "SELECT count(*) FROM ctxd.entries") == 600
    assert team_scalar(dsn, "SELECT entry_cursor FROM ctxd.machines") == 600
    state = read_state(paths)
    assert state is not None and state.entry_cursor == 600  # written after commits only
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TRIGGER refuse ON ctxd.machines")
    _ship(paths, dsn)
    assert team_digest(dsn, shipper.who.machine_id) == local_digest(paths)


def test_the_database_cursor_wins_over_a_lost_local_state(tmp_path: Path, dsn: str) -> None:
    paths = indexed(tmp_path / "a", 900, seed=4)
    first = Shipper(paths, team_config(batch_rows=300), dsn)
    first.ship(max_batches=2)
    first.close()
    (paths.root / "team" / "state.json").unlink()  # a crash right after the commit
    again = Shipper(paths, team_config(batch_rows=300), dsn)
    report = again.ship()
    again.close()
    assert report.entries == 300  # only what the database had not committed
    assert team_scalar(dsn, "SELECT rows_shipped FROM ctxd.machines") == 900
    assert team_digest(dsn, first.who.machine_id) == local_digest(paths)


def test_two_shippers_of_one_machine_at_once_ship_each_entry_once(
    tmp_path: Path, dsn: str
) -> None:
    paths = indexed(tmp_path / "a", 3000, seed=5)
    shippers = [Shipper(paths, team_config(batch_rows=200), dsn) for _ in range(2)]
    errors: list[BaseException] = []

    def run(s: Shipper) -> None:
        try:
            s.ship()
        except BaseException as e:
            errors.append(e)
        finally:
            s.close()

    threads = [threading.Thread(target=run, args=(s,)) for s in shippers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    assert team_digest(dsn, shippers[0].who.machine_id) == local_digest(paths)
    assert team_scalar(dsn, "SELECT rows_shipped FROM ctxd.machines") == 3000


def test_a_forgotten_session_leaves_the_team_store(tmp_path: Path, dsn: str) -> None:
    paths = indexed(tmp_path / "a", 1500, seed=6)
    shipper = _ship(paths, dsn)
    gone = "5e550001-1b2d-4c3e-9f40-5a6b7c8d0001"
    assert team_scalar(dsn, "SELECT count(*) FROM ctxd.entries WHERE session_id = %s", gone)
    forget(paths, gone, None)
    _ship(paths, dsn)
    for table in ("entries", "sessions", "agents", "memory"):
        sql = f"SELECT count(*) FROM ctxd.{table} WHERE session_id = %s"
        assert team_scalar(dsn, sql, gone) == 0, table
    assert team_digest(dsn, shipper.who.machine_id) == local_digest(paths)


def test_retention_reaches_the_team_store(tmp_path: Path, dsn: str) -> None:
    paths = indexed(tmp_path / "a", 1500, seed=7)
    shipper = _ship(paths, dsn)
    cutoff = T0 + 90 * 60 * 10**9  # half of the events' three hours
    with writer_lock(paths):
        writer = open_writer(paths, Config())
        try:
            deleted, _sessions = purge.expire_before(writer.conn, paths, cutoff)
        finally:
            writer.close()
    assert deleted
    _ship(paths, dsn)
    assert team_scalar(dsn, "SELECT count(*) FROM ctxd.entries WHERE ts_ns < %s", cutoff) == 0
    assert team_digest(dsn, shipper.who.machine_id) == local_digest(paths)


def test_ids_given_again_after_the_newest_session_is_forgotten_are_shipped(
    tmp_path: Path, dsn: str
) -> None:
    paths = StatePaths(tmp_path / "a")
    _prompts(paths, "older", 50, T0)
    _prompts(paths, "newest", 50, T0 + 10**9)
    catch_up(paths, Config())
    shipper = _ship(paths, dsn)
    forget(paths, "newest", None)  # ids 51..100 are free again: SQLite gives them anew
    _prompts(paths, "later", 80, T0 + 2 * 10**9)  # ids 51..130, past the old cursor too
    catch_up(paths, Config())
    again = Shipper(paths, team_config(batch_rows=300), dsn)
    report = again.ship()
    again.close()
    assert (report.resets, report.purges, report.entries) == (0, 1, 80)
    assert team_scalar(dsn, "SELECT count(*) FROM ctxd.entries WHERE session_id = 'later'") == 80
    assert team_digest(dsn, shipper.who.machine_id) == local_digest(paths)


def test_a_replaced_index_is_shipped_again_whole(tmp_path: Path, dsn: str) -> None:
    paths = StatePaths(tmp_path / "a")
    spool_events(paths, 600, seed=8, total=800)
    catch_up(paths, Config())
    shipper = _ship(paths, dsn)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{paths.index_db}{suffix}").unlink(missing_ok=True)
    spool_events(paths, 800, seed=8, first=600)  # the new index also holds newer events
    catch_up(paths, Config())
    again = Shipper(paths, team_config(batch_rows=300), dsn)
    report = again.ship()
    again.close()
    assert report.resets == 1 and local_digest(paths)[0] == 800
    assert team_digest(dsn, shipper.who.machine_id) == local_digest(paths)


def test_a_new_project_name_relabels_every_row_of_the_machine(tmp_path: Path, dsn: str) -> None:
    paths = StatePaths(tmp_path / "a")
    spool_events(paths, 400, seed=9, total=500)
    catch_up(paths, Config())
    _ship(paths, dsn, team_config("old-name", batch_rows=300))
    spool_events(paths, 500, seed=9, first=400)  # more to ship, too
    catch_up(paths, Config())
    _ship(paths, dsn, team_config("new-name", user="renamed", batch_rows=300))
    for table in ("entries", "sessions", "agents", "machines"):
        sql = f"SELECT count(*) FROM ctxd.{table} WHERE project <> 'new-name' OR user_name <> 'renamed'"
        assert team_scalar(dsn, sql) == 0, table
    assert team_scalar(dsn, "SELECT count(*) FROM ctxd.entries") == 500
