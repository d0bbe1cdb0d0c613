"""Two machines ship into one project while one daemon is killed (kill -9) again and again
mid-batch and PostgreSQL restarts mid-ship: afterwards the team store holds exactly the union
of both local indexes (count and checksum of ids per machine).

"Machines" are two state directories, each with its own daemon (`ctxd run` subprocesses) and
so its own machine id. Kills land two ways, in turn: once the team store's cursor of machine A
has passed a random point of what A has indexed (so at least one batch is still to go: mid
shipping, seen in the database, not guessed from timing), and after a random delay.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from helpers import REPO, hook_env, poll
from pg_helpers import PgCluster
from team_helpers import local_digest, team_digest, write_config
from test_crash import generate

from indexer.paths import StatePaths
from summarizer.team.schema import migrate

PROJECT = "github.com/acme/shop"


@dataclass
class Machine:
    paths: StatePaths
    lines: list[tuple[str, bytes]]
    written: int = 0
    proc: subprocess.Popen[bytes] | None = None

    def write(self, upto: int) -> None:
        for segment, line in self.lines[self.written : upto]:
            with open(self.paths.spool / segment, "ab") as f:
                f.write(line)
        self.written = max(self.written, upto)

    def start(self) -> None:
        env = hook_env("/nonexistent")
        env["PYTHONPATH"] = str(REPO)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "summarizer.cli.app", "run", "--state-dir", str(self.paths.root)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def wait_until_running(self) -> None:
        """Until the daemon's heartbeat file names this process (its start is over)."""
        assert self.proc is not None
        pid = self.proc.pid
        beat = self.paths.root / "daemon.json"

        def running() -> bool:
            try:
                return json.loads(beat.read_text()).get("pid") == pid
            except (OSError, ValueError):
                return False

        poll(running, timeout=60)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.proc = None

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=60)
        self.proc = None
        return code

    @property
    def machine_id(self) -> str:
        path = self.paths.root / "team" / "machine_id"
        return path.read_text().strip() if path.exists() else ""


def _cursor(dsn: str, machine_id: str) -> int:
    try:
        with psycopg.connect(dsn, connect_timeout=5) as conn:
            row = conn.execute(
                "SELECT entry_cursor FROM ctxd.machines WHERE machine_id = %s", (machine_id,)
            ).fetchone()
    except psycopg.OperationalError:  # the server is restarting
        return -1
    return int(row[0]) if row else 0


def _machine(root: Path, dsn: str, events: int, seed: int) -> Machine:
    paths = StatePaths(root)
    # Small batches: many commit points for a kill to fall between; a short retry cap, so
    # the server restart costs seconds.
    write_config(paths, dsn, PROJECT, batch_rows=150, retry_max_s=3.0)
    with open(paths.config, "a") as f:
        f.write("\n[ingest]\nbatch_lines = 400\n\n[daemon]\nrescan_interval_s = 0.2\n")
    return Machine(paths, generate(events, seed).lines)


def _crash_run(tmp_path: Path, cluster: PgCluster, dsn: str, kills: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        migrate(conn)
    rng = random.Random(kills)
    per_kill = 600
    a = _machine(tmp_path / "a", dsn, 2000 + kills * per_kill, seed=31)
    b = _machine(tmp_path / "b", dsn, 6000, seed=32)
    b.write(3000)
    b.start()  # machine B ships the whole time, beside A
    a.write(2000)
    mid_batch = 0
    restarted = False
    for k in range(kills):
        a.write(2000 + (k + 1) * per_kill)
        if k == kills // 2:
            b.write(len(b.lines))
        a.start()
        machine = poll(lambda: a.machine_id, timeout=60)
        if k == kills // 2 and not restarted:
            # The server goes down (immediate: a crash for it) while both daemons ship.
            poll(lambda: _cursor(dsn, machine) > 0, timeout=60)
            cluster.restart("immediate")
            restarted = True
        before = max(_cursor(dsn, machine), 0)
        if k % 2 == 0:
            target = before + rng.randrange(1, max(2, a.written - before - 150))
            poll(lambda: _cursor(dsn, machine) >= min(target, a.written), timeout=120)
        else:
            time.sleep(rng.uniform(0.2, 2.5))  # paces the run: the kill lands where it may
        a.kill()
        at_kill = _cursor(dsn, machine)
        mid_batch += 0 <= at_kill < a.written
    a.write(len(a.lines))
    a.start()
    a.wait_until_running()  # a SIGTERM before the daemon's handlers are in would kill it
    try:
        for m in (a, b):
            poll(lambda m=m: team_digest(dsn, m.machine_id) == local_digest(m.paths), timeout=240)
    finally:
        codes = [m.stop() for m in (a, b)]
    assert codes == [0, 0]
    for m in (a, b):
        count, checksum = local_digest(m.paths)
        assert count == len(m.lines)  # every event indexed once
        assert team_digest(dsn, m.machine_id) == (count, checksum)
    with psycopg.connect(dsn) as conn:
        total, machines, shipped = conn.execute(
            "SELECT (SELECT count(*) FROM ctxd.entries WHERE project = %s),"
            " (SELECT count(*) FROM ctxd.machines WHERE project = %s),"
            " (SELECT sum(rows_shipped) FROM ctxd.machines)",
            (PROJECT, PROJECT),
        ).fetchone()
    assert (total, machines) == (len(a.lines) + len(b.lines), 2)
    assert shipped == total  # no batch was counted twice either
    assert restarted and mid_batch >= max(1, kills // 2), (mid_batch, kills)


def test_kills_and_a_server_restart_leave_exactly_the_union(
    tmp_path: Path, pg_cluster: PgCluster, team_dsn: str
) -> None:
    _crash_run(tmp_path, pg_cluster, team_dsn, kills=4)


@pytest.mark.full
def test_twenty_kills_and_a_server_restart_leave_exactly_the_union(
    tmp_path: Path, pg_cluster: PgCluster, team_dsn: str
) -> None:
    _crash_run(tmp_path, pg_cluster, team_dsn, kills=20)
