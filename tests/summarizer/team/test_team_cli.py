"""`ctxd team …`, and the team store in `status`, `doctor` and `forget`, as a user runs them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psycopg
from helpers import REPO, clean_env, poll, run_cli
from team_helpers import indexed, spool_events, team_scalar, write_config

from indexer.paths import StatePaths
from summarizer.team.schema import migrate

GONE = "5e550001-1b2d-4c3e-9f40-5a6b7c8d0001"


def _initialized(dsn: str) -> str:
    with psycopg.connect(dsn, autocommit=True) as conn:
        migrate(conn)
    return dsn


def test_without_psycopg_team_commands_say_how_to_install_it(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "psycopg"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named psycopg')\n")
    paths = indexed(tmp_path / "s", 20, seed=1)
    write_config(paths, "postgresql://db.example.com/ctxd")
    env = clean_env(CTXD_HOME=str(paths.root), PYTHONPATH=f"{shadow.parent}{os.pathsep}{REPO}")

    def ctxd(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "summarizer.cli.app", *args],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip

    for verb in ("init", "ship"):
        out = ctxd("team", verb)
        assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
        assert "pip install 'ctxd-claude[team]'" in out.stderr
    assert ctxd("status").returncode == 0  # the core install needs no driver
    assert ctxd("search", "cache").returncode == 0
    doctor = ctxd("doctor")
    assert "FAIL  team store: [team] dsn is set but psycopg is not installed" in doctor.stdout


def test_status_ship_and_status_again(tmp_path: Path, team_dsn: str) -> None:
    paths = indexed(tmp_path / "s", 500, seed=2)
    off = run_cli("team", "status", state_dir=paths.root)
    assert off.returncode == 0 and "team store:  off" in off.stdout
    write_config(paths, _initialized(team_dsn), "proj-cli")
    before = json.loads(run_cli("team", "status", "--json", state_dir=paths.root).stdout)
    assert before["waiting_entries"] == 500 and before["last_ship"] is None
    assert before["server"]["reachable"] and before["server"]["machine_entries"] == 0
    shipped = run_cli("team", "ship", state_dir=paths.root)
    assert shipped.returncode == 0, shipped.stderr
    assert "shipped 500 entries, 0 deletions and 0 memory items" in shipped.stdout
    after = json.loads(run_cli("team", "status", "--json", state_dir=paths.root).stdout)
    assert after["waiting_entries"] == 0 and after["server"]["machine_entries"] == 500
    assert after["rows_shipped"] == 500 and after["last_error"] is None
    text = run_cli("status", state_dir=paths.root).stdout
    assert "team:        shipped up to entry 500, 0 waiting" in text


def test_forget_reaches_the_team_store_at_once(tmp_path: Path, team_dsn: str) -> None:
    paths = indexed(tmp_path / "s", 800, seed=3)
    write_config(paths, _initialized(team_dsn), "proj-cli")
    assert run_cli("team", "ship", state_dir=paths.root).returncode == 0
    assert team_scalar(team_dsn, "SELECT count(*) FROM ctxd.sessions WHERE session_id = %s", GONE)
    out = run_cli("forget", GONE, state_dir=paths.root)
    assert out.returncode == 0, out.stderr
    assert "the team store forgot them too (1 deletions shipped)" in out.stdout
    for table in ("entries", "sessions", "agents"):
        sql = f"SELECT count(*) FROM ctxd.{table} WHERE session_id = %s"
        assert team_scalar(team_dsn, sql, GONE) == 0, table


def test_forget_while_the_server_is_away_reaches_it_later(tmp_path: Path, team_dsn: str) -> None:
    paths = indexed(tmp_path / "s", 800, seed=4)
    write_config(paths, _initialized(team_dsn), "proj-cli")
    assert run_cli("team", "ship", state_dir=paths.root).returncode == 0
    away = {**clean_env(), "CTXD_TEAM_DSN": f"host={tmp_path / 'nowhere'} dbname=x"}
    out = run_cli("forget", GONE, state_dir=paths.root, env=away)
    assert out.returncode == 0 and "the team store still holds them" in out.stdout
    assert team_scalar(team_dsn, "SELECT count(*) FROM ctxd.entries WHERE session_id = %s", GONE)
    assert run_cli("team", "ship", state_dir=paths.root).returncode == 0
    assert team_scalar(team_dsn, "SELECT count(*) FROM ctxd.entries WHERE session_id = %s", GONE) == 0


def test_an_unreachable_server_is_shown_and_indexing_goes_on(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "s")
    spool_events(paths, 300, seed=5, total=400)
    write_config(paths, f"host={tmp_path / 'no-server'} dbname=ctxd", "proj-away", retry_max_s=2.0)
    env = clean_env(CTXD_HOME=str(paths.root), PYTHONPATH=str(REPO))
    daemon = subprocess.Popen(
        [sys.executable, "-m", "summarizer.cli.app", "run"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        state = paths.root / "team" / "state.json"
        poll(lambda: state.exists() and json.loads(state.read_text()).get("failures", 0) >= 3, timeout=60)
        spool_events(paths, 400, seed=5, first=300)
        status = poll(
            lambda: (s := run_cli("status", state_dir=paths.root).stdout) and "entries:     400" in s and s,
            timeout=60,
        )
        assert "team:        NOT SHIPPING: connecting to the team database" in status
        assert "400 entries waiting" in status
        doctor = run_cli("doctor", state_dir=paths.root)
        assert "WARN  team store:" in doctor.stdout and "unreachable" in doctor.stdout
    finally:
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=60) == 0
    log = (paths.root / "ctxd.log").read_text()
    # One warning for the outage, not one per attempt.
    assert log.count("WARNING ctxd.team: team store: connecting to the team database") == 1
