"""`[team] startup = true`: a new session's memory adds the team's decisions and constraints
(from the project's other machines) within the same budget, through the real daemon and hook."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import msgspec
import psycopg
import pytest
from helpers import REPO, hook_env, payload, poll, run_hook
from memory_helpers import prompt, replay
from team_helpers import write_config

from indexer.config import load_config
from indexer.paths import StatePaths
from summarizer.common.tokens import get_counter
from summarizer.memory.compact import compact_now
from summarizer.memory.emit import emit
from summarizer.resume.files import STARTUP_FILE
from summarizer.resume.startup import STARTUP_MAX_TOKENS, TeamNote, read_team_notes, render_startup
from summarizer.team.identity import identity
from summarizer.team.notes import refresh_startup_notes
from summarizer.team.schema import migrate
from summarizer.team.shipper import Shipper

PROJECT = "github.com/acme/shop"
BOB = "b0b00000-0000-4000-8000-00000000000b"
RULE = "Never deploy the billing service on Fridays"


def _bob(root: Path, dsn: str, rules: list[str]) -> StatePaths:
    paths = replay(root, [prompt("set up the release checklist", BOB)])
    write_config(paths, dsn, PROJECT, user='"bob"')
    for rule in rules:
        emit("constraint", paths=paths, session_id=BOB, description=rule)
    emit("decision", paths=paths, session_id=BOB, decision="Use blue-green deploys for billing")
    config = load_config(paths.config)
    compact_now(paths, config, trigger="test")
    shipper = Shipper(paths, config, dsn)
    shipper.ship()
    shipper.close()
    return paths


@pytest.fixture
def dsn(team_dsn: str) -> str:
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        migrate(conn)
    return team_dsn


def test_team_notes_fill_the_startup_memory_within_its_budget(tmp_path: Path, dsn: str) -> None:
    many = [f"{RULE} number {i}, whatever the deadline says about it" for i in range(40)]
    _bob(tmp_path / "bob", dsn, many)
    alice = StatePaths(tmp_path / "alice")
    write_config(alice, dsn, PROJECT, user='"alice"', startup=True)
    config = load_config(alice.config)
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert refresh_startup_notes(alice, config, conn, identity(alice, config))
        assert not refresh_startup_notes(alice, config, conn, identity(alice, config))
    text = (alice.context / STARTUP_FILE).read_text()
    assert RULE in text and "(bob@" in text and "[constraint]" in text
    assert get_counter().count(text) <= STARTUP_MAX_TOKENS
    off = msgspec.structs.replace(config, team=msgspec.structs.replace(config.team, startup=False))
    assert read_team_notes(alice, off) == []  # the notes are kept, but not used


def test_local_memory_comes_first_and_the_team_gets_what_is_left() -> None:
    count = get_counter().count
    notes = [TeamNote("constraint", f"team rule {i} " + "word " * 20, "bob@ci") for i in range(30)]
    text = render_startup(None, count, team=notes)
    assert text.startswith("ctxd project memory: what the team decided.")
    assert 0 < count(text) <= STARTUP_MAX_TOKENS and "team rule 0" in text
    assert render_startup(None, count, team=[]) == ""


def test_a_new_session_gets_the_team_rules_from_the_real_hook(tmp_path: Path, dsn: str) -> None:
    _bob(tmp_path / "bob", dsn, [RULE])
    alice = StatePaths(tmp_path / "alice")
    write_config(alice, dsn, PROJECT, user='"alice"', startup=True)
    env = hook_env(alice.root)
    env["PYTHONPATH"] = str(REPO)
    daemon = subprocess.Popen(
        [sys.executable, "-m", "summarizer.cli.app", "run"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        startup = alice.context / STARTUP_FILE
        poll(lambda: startup.exists() and RULE in startup.read_text(), timeout=60)
    finally:
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=60) == 0
    start = payload(hook_event_name="SessionStart", source="startup", session_id="a11ce000-1")
    out = run_hook(start, hook_env(alice.root))
    assert out.returncode == 0
    context = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert RULE in context and "bob@" in context
