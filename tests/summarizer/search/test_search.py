"""Search: the FTS5 index kept by ingest and the memory, ranking, filters, redaction, the CLI."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, clean_env, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from memory_helpers import SESSION, base, bash, emit_payload, prompt, replay
from planted_secrets import fingerprint, first_of_each_kind

from indexer.index import store
from indexer.index.transactions import transaction
from indexer.paths import StatePaths
from indexer.search import index as search_index
from indexer.search import query as search_query
from indexer.writer.catch_up import catch_up
from summarizer.cli.parsers.search import KINDS as CLI_KINDS
from summarizer.memory.compact import compact_now
from summarizer.search.query import SearchQueryError, to_match
from summarizer.search.service import Filters, search

OTHER = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
DAY_NS = 86_400 * 10**9


def _spool_at(state: Path, payloads: list[tuple[int, dict[str, Any]]]) -> StatePaths:
    """Write spool lines with chosen timestamps (as the hook would), then catch up."""
    paths = StatePaths(state)
    paths.ensure()
    segment = paths.spool / time.strftime("%Y%m%dT%H.jsonl", time.gmtime())
    with open(segment, "ab") as f:
        for i, (ts_ns, p) in enumerate(payloads):
            line = {"ctxd": 1, "ts_ns": ts_ns, "pid": 1000 + i, "event": p}
            f.write(json.dumps(line).encode() + b"\n")
    catch_up(paths)
    return paths


def _search(paths: StatePaths, text: str, **kw: Any) -> list[Any]:
    now_ns = kw.pop("now_ns", None)
    conn = store.connect(paths.index_db, readonly=True)
    try:
        return search(conn, text, Filters(**kw), now_ns=now_ns)
    finally:
        conn.close()


def test_kinds_of_the_parser_are_the_index_kinds() -> None:
    from typing import get_args

    from summarizer.mcp.server import Kind

    assert CLI_KINDS == search_index.KINDS == get_args(Kind)


def test_prompts_commands_errors_and_agents_are_found(tmp_path: Path) -> None:
    agent_start = base(
        "PreToolUse", tool_name="Agent", tool_use_id="ag1",
        tool_input={"description": "audit", "prompt": "Audit the zephyrine module", "subagent_type": "x"},
    )  # fmt: skip
    paths = replay(
        tmp_path,
        [
            prompt("Please migrate the quokka database"),
            *bash("make quokka-migrate", "t1", error="Exit code 2\nquokka: relation missing"),
            agent_start,
            prompt("unrelated words only", session=OTHER),
        ],
    )
    hits = _search(paths, "quokka")
    assert {h.kind for h in hits} == {"prompt", "error"}
    assert all(h.session_id == SESSION and h.agent_id == "main" for h in hits)
    assert all("**quokka**" in h.snippet.lower() for h in hits)
    assert all(h.time.endswith("Z") and "T" in h.time for h in hits)
    assert [h.kind for h in _search(paths, "zephyrine")] == ["agent"]
    assert [h.kind for h in _search(paths, "quokka", kinds=("error",))] == ["error"]
    assert _search(paths, "quokka", session=OTHER[:8]) == []
    assert [h.session_id for h in _search(paths, "unrelated", session=OTHER[:8])] == [OTHER]
    assert _search(paths, "quokka", agent="nobody") == []
    # Pre-tool events are not indexed twice: one hit for the command, the failure's.
    assert len(_search(paths, "migrate", kinds=("tool", "error"))) == 1


def test_ranking_prefers_relevance_then_recency(tmp_path: Path) -> None:
    now = time.time_ns()
    paths = _spool_at(
        tmp_path,
        [
            *[(now - 40 * DAY_NS, prompt(f"unrelated prompt number {i}")) for i in range(20)],
            (now - 10 * DAY_NS, prompt("flaky test again: flaky flaky flaky")),
            (now - 30 * DAY_NS, prompt("old note about a flaky build")),
            (now - 1 * DAY_NS, prompt("new note about a flaky build")),
            (now - 2 * DAY_NS, prompt("a long note " + "filler words " * 60 + "flaky")),
        ],
    )
    hits = _search(paths, "flaky", now_ns=now)
    texts = [h.snippet for h in hits]
    assert "flaky**" in texts[0] and "again" in texts[0]  # most relevant, though old
    new = next(i for i, t in enumerate(texts) if "new note" in t)
    old = next(i for i, t in enumerate(texts) if "old note" in t)
    assert new < old  # same text, the newer first
    assert hits == sorted(hits, key=lambda h: -h.score)
    assert len(_search(paths, "flaky", limit=2, now_ns=now)) == 2
    since = time.strftime("%Y-%m-%d", time.gmtime((now - 3 * DAY_NS) / 1e9))
    recent = _search(paths, "flaky", since=since)
    assert len(recent) == 2 and any("new note" in h.snippet for h in recent)


def test_memory_items_are_searchable_and_follow_the_memory(tmp_path: Path) -> None:
    paths = replay(
        tmp_path,
        [
            emit_payload({"kind": "decision", "decision": "Use the pelican parser"}),
            emit_payload({"kind": "constraint", "description": "Never edit the pelican config"}),
            emit_payload(
                {
                    "kind": "failure",
                    "description": "pelican build timed out",
                    "prevention": "raise the walrus timeout",
                }
            ),
        ],
    )
    from indexer.config import load_config

    compact_now(paths, load_config(paths.config), trigger="test")
    kinds = {h.kind for h in _search(paths, "pelican")}
    assert {"decision", "constraint", "failure"} <= kinds
    [failure] = _search(paths, "walrus", kinds=("failure",))
    assert "prevention" not in failure.snippet and "**walrus**" in failure.snippet
    # A second compaction that touches the same items replaces their documents.
    conn = store.connect(paths.index_db)
    try:
        docs = search_index.count_documents(conn)
        assert search_index.rebuild(conn) == docs
    finally:
        conn.close()


def test_snippets_show_only_redacted_text(tmp_path: Path) -> None:
    secrets = [p for p in first_of_each_kind() if p.kind in ("anthropic", "aws-access-key", "npm")]
    assert len(secrets) == 3
    paths = replay(
        tmp_path,
        [prompt(f"deploy the heron stack with {p.context.format(s=p.secret)}") for p in secrets],
    )
    hits = _search(paths, "heron", limit=50)
    assert len(hits) == len(secrets)
    shown = " ".join(h.snippet for h in hits)
    assert shown.count("REDACTED") == len(secrets)
    assert not any(fingerprint(p.secret) in shown for p in secrets)
    conn = store.connect(paths.index_db, readonly=True)
    stored = " ".join(r[0] for r in conn.execute("SELECT body FROM search"))
    conn.close()
    assert not any(fingerprint(p.secret) in stored for p in secrets)


def test_duplicates_and_deletes_keep_the_index_exact(tmp_path: Path) -> None:
    paths = replay(tmp_path, [*bash("make egret", "t1"), *bash("make egret", "t1")])
    conn = store.connect(paths.index_db)
    try:
        assert (
            conn.execute("SELECT count(*) FROM search WHERE search MATCH 'egret'").fetchone()[0]
            == 1
        )  # the repeated PostToolUse is a duplicate entry, so one document
        with transaction(conn):
            conn.execute("DELETE FROM entries")
        assert search_index.count_documents(conn) == 0
    finally:
        conn.close()


def test_an_index_without_search_gains_it_backfilled(tmp_path: Path) -> None:
    paths = replay(tmp_path, [prompt("the osprey nests"), *bash("ls osprey", "t9")])
    conn = sqlite3.connect(paths.index_db)
    for trig in ("search_entry_ad", "search_entry_au", "search_mem_ad"):
        conn.execute(f"DROP TRIGGER {trig}")
    conn.execute("DROP TABLE search")
    conn.execute("DROP TABLE search_mem")
    conn.execute("DELETE FROM meta WHERE key='search.version'")
    conn.commit()
    conn.close()
    catch_up(paths)  # a writer of this version opens it
    assert {h.kind for h in _search(paths, "osprey")} == {"prompt", "tool"}


def test_an_index_that_indexed_entries_by_trigger_keeps_its_documents_and_indexes_once(
    tmp_path: Path,
) -> None:
    # The previous search version indexed each entry in an insert trigger; this one indexes a
    # batch in one statement. Left in place, the trigger would index each new entry twice
    # (a rowid conflict that stops ingest).
    from indexer.search import sql as search_sql

    paths = replay(tmp_path, [prompt("the heron nests")])
    conn = sqlite3.connect(paths.index_db)
    conn.execute(
        "CREATE TRIGGER search_entry_ai AFTER INSERT ON entries"
        f" WHEN new.event IN ({search_sql._EVENTS_SQL}) BEGIN"
        " INSERT INTO search(rowid, body, tags, kind, session_id, agent_id, ts_ns)"
        f" VALUES (new.id, {search_sql._BODY_SQL}, {search_sql._TAGS_SQL},"
        f" {search_sql._KIND_SQL}, new.session_id, new.agent_id, new.ts_ns); END"
    )
    conn.execute("UPDATE meta SET value='2' WHERE key='search.version'")
    conn.commit()
    conn.close()
    paths = replay(tmp_path, [prompt("a second heron")])  # a writer of this version
    assert [h.kind for h in _search(paths, "heron")] == ["prompt", "prompt"]
    conn = sqlite3.connect(paths.index_db)
    try:
        triggers = {
            r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='trigger'")
        }
        assert "search_entry_ai" not in triggers and "search_entry_ad" in triggers
        assert search_index.count_documents(conn) == 2
    finally:
        conn.close()


def test_a_search_index_of_another_version_is_built_again(tmp_path: Path) -> None:
    paths = replay(tmp_path, [prompt("the gannet colony")])
    conn = sqlite3.connect(paths.index_db)
    conn.execute("DELETE FROM search")  # as if an older version had indexed other documents
    conn.execute("UPDATE meta SET value='0' WHERE key='search.version'")
    conn.commit()
    conn.close()
    assert _search(paths, "gannet") == []  # a reader of the old index finds what it holds
    catch_up(paths)
    assert [h.kind for h in _search(paths, "gannet")] == ["prompt"]


def test_forget_takes_entries_and_memory_out_of_search(tmp_path: Path) -> None:
    paths = replay(
        tmp_path,
        [
            prompt("the ibis ledger"),
            emit_payload({"kind": "decision", "decision": "Keep the ibis ledger"}, session=SESSION),
            prompt("ibis elsewhere", session=OTHER),
        ],
    )
    from indexer.config import load_config

    compact_now(paths, load_config(paths.config), trigger="test")
    assert {h.session_id for h in _search(paths, "ibis")} == {SESSION, OTHER}
    out = run_cli("forget", SESSION, state_dir=tmp_path)
    assert out.returncode == 0, out.stderr
    assert {h.session_id for h in _search(paths, "ibis")} == {OTHER}


@pytest.mark.parametrize(
    "text", ['"', "NEAR(a b", "a OR", "col:x", "*", "(((", "^x", "a AND", "NOT b", "x'y", "-z"]
)
def test_fts5_syntax_in_user_text_is_literal(tmp_path: Path, text: str) -> None:
    paths = replay(tmp_path, [prompt("a OR b NEAR x col z y")])
    try:
        _search(paths, text)
    except SearchQueryError as e:
        assert "word" in str(e)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_any_text_is_a_valid_match_or_a_clear_error(text: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(body, tokenize='unicode61 remove_diacritics 2')"
    )
    try:
        match = to_match(text)
    except SearchQueryError:
        return
    conn.execute("SELECT count(*) FROM t WHERE t MATCH ?", (match,)).fetchone()


def test_cli_search_json_and_text(tmp_path: Path) -> None:
    replay(tmp_path, [prompt("tune the cormorant cache")])
    out = run_cli("search", "cormorant", "--json", state_dir=tmp_path)
    assert out.returncode == 0, out.stderr
    [hit] = json.loads(out.stdout)
    assert hit["kind"] == "prompt" and hit["session_id"] == SESSION and hit["agent_id"] == "main"
    assert "**cormorant**" in hit["snippet"]
    text = run_cli("search", "cormorant", state_dir=tmp_path)
    assert text.returncode == 0 and SESSION[:8] in text.stdout and "**cormorant**" in text.stdout
    none = run_cli("search", "absent", state_dir=tmp_path)
    assert none.returncode == 0 and none.stdout == "" and "no matches" in none.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--", "!!!"], "nothing to search for"),
        (["x", "--since", "yesterday"], "is not a date"),
        (["x", "--limit", "0"], "--limit must be between"),
        (["x", "--session", "../etc"], "invalid session id"),
        (["x", "--agent", "a/b"], "invalid agent id"),
    ],
)
def test_cli_bad_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    out = run_cli("search", *args, state_dir=tmp_path / "state")
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1 and message in out.stderr, out.stderr
    assert not (tmp_path / "state").exists()


def test_cli_search_creates_no_state(tmp_path: Path) -> None:
    state = tmp_path / "nothing-here"
    out = run_cli("search", "anything", state_dir=state)
    assert out.returncode == 0, out.stderr
    assert not state.exists()
    assert os.listdir(tmp_path) == ["nothing-here"] or not os.listdir(tmp_path)


def test_a_common_word_ranks_the_latest_events_and_every_memory_item(tmp_path: Path) -> None:
    paths = replay(
        tmp_path,
        [
            prompt("plover one", session=OTHER),
            *[prompt(f"plover number {i}") for i in range(6)],
            emit_payload({"kind": "decision", "decision": "Ring every plover"}),
        ],
    )
    from indexer.config import load_config

    compact_now(paths, load_config(paths.config), trigger="test")
    conn = store.connect(paths.index_db, readonly=True)
    try:
        match = to_match("plover")

        def found(**kw: Any) -> list[search_query.Hit]:
            return search_query.query(
                conn, match, now_ns=time.time_ns(), half_life_h=168, limit=50, candidates=50, **kw
            )

        windowed = found(window=3)
        assert [h.kind for h in windowed].count("prompt") == 3
        assert "decision" in {h.kind for h in windowed}
        assert OTHER not in {h.session_id for h in windowed}  # the oldest event is out
        assert [h.session_id for h in found(window=3, session_prefix=OTHER[:8])] == [OTHER]
        assert len(found(window=1000)) == 8
        assert [h.kind for h in found(window=3, kinds=("decision",))] == ["decision"]
    finally:
        conn.close()


def test_a_relinked_agent_moves_its_documents(tmp_path: Path) -> None:
    paths = replay(tmp_path, [prompt("the skua nest")])
    conn = store.connect(paths.index_db)
    try:
        with transaction(conn):
            conn.execute("UPDATE entries SET agent_id='skua-1' WHERE agent_id='main'")
        [(agent,)] = conn.execute("SELECT agent_id FROM search WHERE search MATCH 'skua'")
        assert agent == "skua-1"
    finally:
        conn.close()


def test_search_on_a_current_index_loads_no_ingest_code(tmp_path: Path) -> None:
    replay(tmp_path, [prompt("the tern roost")])
    from indexer.config import load_config

    compact_now(StatePaths(tmp_path), load_config(StatePaths(tmp_path).config), trigger="t")
    code = (
        "import sys; from summarizer.cli.app import main;"
        f"rc = main(['search', 'tern', '--state-dir', {str(tmp_path)!r}]);"
        "heavy = {'msgspec', 'tiktoken', 'indexer.ingest.ingestor', 'watchdog', 'apscheduler'};"
        "print(sorted(heavy & set(sys.modules)), rc, file=sys.stderr)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=clean_env(PYTHONPATH=str(REPO)),
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "**tern**" in out.stdout
    assert out.stderr.strip().splitlines()[-1] == "[] 0", out.stderr
