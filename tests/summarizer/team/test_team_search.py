"""Reading the team's memory: `ctxd search --team`, `ctxd sessions --team`, snippets, queries."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import run_cli
from memory_helpers import base, bash, prompt, replay
from team_helpers import team_config, write_config

from indexer.config import load_config
from indexer.index import store
from indexer.paths import StatePaths
from summarizer.memory.compact import compact_now
from summarizer.memory.emit import emit
from summarizer.search.query import SearchQueryError
from summarizer.search.service import Filters
from summarizer.search.service import search as local_search
from summarizer.team import search
from summarizer.team.schema import migrate
from summarizer.team.shipper import Shipper

ALICE = "7a11ce00-0000-4000-8000-00000000000a"
BOB = "b0b00000-0000-4000-8000-00000000000b"


def _machine(root: Path, dsn: str, user: str, session: str, words: str) -> StatePaths:
    """A state directory of `user`, one session about `words`, compacted and shipped."""
    edit = base(
        "PostToolUse", session, tool_name="Edit", tool_use_id=f"toolu_e_{user}",
        tool_input={"file_path": "/home/dev/shop/src/export.py", "old_string": "a", "new_string": "b"},
        tool_response={"filePath": "/home/dev/shop/src/export.py"},
    )  # fmt: skip
    paths = replay(
        root,
        [
            base("SessionStart", session, source="startup"),
            prompt(f"please look at the {words} in the billing module", session),
            *bash("pytest -q tests/test_export.py", f"toolu_b_{user}", session=session,
                  error=f"Exit code 1\nFAILED test_export - {words} mismatch"),
            edit,
        ],
    )  # fmt: skip
    write_config(paths, dsn, "github.com/acme/shop", user=f'"{user}"')
    emit("decision", paths=paths, session_id=session, decision=f"keep the {words} in memory")
    config = load_config(paths.config)
    compact_now(paths, config, trigger="test")
    shipper = Shipper(paths, config, dsn)
    shipper.ship()
    shipper.close()
    return paths


@pytest.fixture
def team(tmp_path: Path, team_dsn: str) -> dict[str, Any]:
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        migrate(conn)
    a = _machine(tmp_path / "a", team_dsn, "alice", ALICE, "albatross ledger")
    b = _machine(tmp_path / "b", team_dsn, "bob", BOB, "albatross cache")
    return {"dsn": team_dsn, "a": a, "b": b}


def _team_search(dsn: str, text: str, **kw: Any) -> list[search.TeamHit]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return search.search(
            conn, "github.com/acme/shop", text, Filters(**kw), now_ns=time.time_ns(), mark=("[", "]")
        )


def test_every_machine_of_the_project_is_searched(team: dict[str, Any]) -> None:
    hits = _team_search(team["dsn"], "albatross", limit=50)
    assert {h.user for h in hits} == {"alice", "bob"}
    assert {h.kind for h in hits} >= {"prompt", "error", "decision"}
    assert all("[albatross]" in h.snippet for h in hits)
    assert {h.session_id for h in hits} == {ALICE, BOB}
    ledger = _team_search(team["dsn"], "albatross ledger", limit=50)
    assert ledger and {h.user for h in ledger} == {"alice"}


@pytest.mark.parametrize(
    "text", ["albatross", "albat*", "src/export.py", "pytest -q", "billing module", "ledger"]
)
def test_a_machine_finds_in_the_team_store_what_it_finds_locally(
    team: dict[str, Any], text: str
) -> None:
    def key(kind: str, session: str, agent: str, when: str) -> tuple[str, str, str, str]:
        return kind, session, agent, when

    conn = store.connect(team["a"].index_db, readonly=True)
    try:
        local = {key(h.kind, h.session_id, h.agent_id, h.time) for h in local_search(conn, text, Filters(limit=100))}
    finally:
        conn.close()
    shipped = {
        key(h.kind, h.session_id, h.agent_id, h.time)
        for h in _team_search(team["dsn"], text, limit=100)
        if h.user == "alice"
    }
    assert local and shipped == local


def test_filters_narrow_as_they_do_locally(team: dict[str, Any]) -> None:
    dsn = team["dsn"]
    assert {h.kind for h in _team_search(dsn, "albatross", kinds=("prompt",))} == {"prompt"}
    assert {h.kind for h in _team_search(dsn, "albatross", kinds=("decision",))} == {"decision"}
    assert {h.session_id for h in _team_search(dsn, "albatross", session=BOB[:6])} == {BOB}
    assert _team_search(dsn, "albatross", since="2999-01-01") == []
    assert len(_team_search(dsn, "albatross", limit=2)) == 2
    assert {h.agent_id for h in _team_search(dsn, "albatross", agent="main", kinds=("prompt",))} == {
        "main"
    }
    with pytest.raises(SearchQueryError):
        _team_search(dsn, "albatross", kinds=("nonsense",))


def test_search_team_on_the_command_line(team: dict[str, Any]) -> None:
    a: StatePaths = team["a"]
    out = run_cli("search", "--team", "albatross", "--kind", "prompt", state_dir=a.root)
    assert out.returncode == 0, out.stderr
    assert "alice@" in out.stdout and "bob@" in out.stdout and "**albatross**" in out.stdout
    as_json = run_cli("search", "--team", "albatross", "--json", state_dir=a.root)
    hits = json.loads(as_json.stdout)
    assert {"kind", "session_id", "agent_id", "time", "snippet", "score", "machine", "user"} <= set(hits[0])
    sessions = run_cli("sessions", "--team", "--json", state_dir=a.root)
    listed = json.loads(sessions.stdout)
    assert {(s["session_id"], s["user"]) for s in listed} >= {(ALICE, "alice"), (BOB, "bob")}
    table = run_cli("sessions", "--team", state_dir=a.root)
    assert "WHO" in table.stdout and "bob@" in table.stdout


def test_without_a_team_database_the_flag_says_how_to_set_one(tmp_path: Path) -> None:
    out = run_cli("search", "--team", "anything", state_dir=tmp_path / "none")
    assert out.returncode == 1
    assert "no team database: set [team] dsn" in out.stderr and out.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("text", "tsquery"),
    [
        ("cache", "'cache'"),
        ("src/export.py", "'src' <-> 'export' <-> 'py'"),
        ("migrat* flaky", "'migrat':* & 'flaky'"),
        ("a'b OR c", "'a' <-> 'b' & 'or' & 'c'"),
        ("Ünïcode", "'ünïcode'"),
    ],
)
def test_user_text_becomes_a_safe_tsquery(text: str, tsquery: str) -> None:
    assert search.to_tsquery(text) == tsquery


@pytest.mark.parametrize(
    ("body", "phrases", "snippet"),
    [
        ("run the cache tests", [(["cache"], False)], "run the [cache] tests"),
        ("q then pytest -q now", [(["pytest", "q"], False)], "q then [pytest] -[q] now"),
        ("refactor caches", [(["cach"], True)], "refactor [caches]"),
        (" ".join(f"w{i}" for i in range(40)) + " cache end", [(["cache"], False)],
         "…" + " ".join(f"w{i}" for i in range(26, 40)) + " [cache] end"),  # 16 words
        ("cache " + " ".join(f"w{i}" for i in range(40)), [(["cache"], False)],
         "[cache] " + " ".join(f"w{i}" for i in range(15)) + "…"),
        ("", [(["x"], False)], ""),
    ],
)  # fmt: skip
def test_snippets_mark_whole_phrase_matches(
    body: str, phrases: list[tuple[list[str], bool]], snippet: str
) -> None:
    assert search.snippet(body, phrases, ("[", "]")) == snippet


def test_the_config_user_names_the_rows() -> None:
    assert team_config(user="carol").team.user == "carol"


def test_the_window_is_the_newest_matches_however_many_blocks(tmp_path: Path, team_dsn: str) -> None:
    # 9,000 entries fill three arrival blocks: the parts of the search must give exactly what
    # one plain "newest matches first" query gives, for common and rare words alike.
    from team_helpers import indexed

    with psycopg.connect(team_dsn, autocommit=True) as conn:
        migrate(conn)
    paths = indexed(tmp_path / "big", 9000, seed=51)
    shipper = Shipper(paths, team_config("proj-big"), team_dsn)
    shipper.ship()
    shipper.close()
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT max(seq) / 4096 FROM ctxd.entries").fetchone()[0] >= 2
        for text in ("cache", "migration schema", "tests/test_cache.py", "worker*", "AgentId worker 1"):
            tsquery = search.to_tsquery(text)
            got = [(r[0], r[1]) for r in search._newest_matches(conn, "proj-big", tsquery, "", [])]
            plain = conn.execute(
                "SELECT machine_id, entry_id FROM ctxd.entries WHERE project = 'proj-big'"
                " AND search @@ to_tsquery('simple', %s) ORDER BY seq DESC LIMIT %s",
                (tsquery, search.WINDOW),
            ).fetchall()
            assert got == [tuple(r) for r in plain], text
            assert got, text
