"""Superseded memory: what a later statement gives up retires; no constraint drops silently."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from helpers import run_cli
from memory_helpers import SESSION, base, prompt, replay

from indexer.config import Config
from indexer.index import store
from indexer.paths import StatePaths
from summarizer.common.tokens import get_counter
from summarizer.memory.injection import build_injection
from summarizer.memory.reader import load_memory
from summarizer.memory.store import compact
from summarizer.resume import writer as resume
from summarizer.resume.startup import render_startup

CFG = Config().summarizer
COUNTER = get_counter(CFG.encoding)


def stop(text: str) -> dict[str, Any]:
    return base("Stop", stop_hook_active=False, last_assistant_message=text)


def _memory(tmp_path: Path, events: list[dict[str, Any]]) -> tuple[StatePaths, Any]:
    paths = replay(tmp_path / "state", events)
    conn = store.connect(paths.index_db)
    try:
        compact(conn)
        return paths, load_memory(conn)
    finally:
        conn.close()


def test_a_later_decision_that_gives_up_an_earlier_choice_retires_it(tmp_path: Path) -> None:
    paths, mem = _memory(tmp_path, [
        stop("Decision: stream rows with the stdlib csv module instead of pandas."),
        stop("Session tokens now use crypto.randomUUID() instead of SHA-256 of a timestamp."),
        prompt("the exports are small now"),
        stop("We'll use pandas instead of the csv module: the files are small."),
        # Same subject, different aspect: nothing of the earlier choice is given up.
        stop("Session tokens are stored in an httpOnly cookie rather than localStorage."),
    ])  # fmt: skip
    assert sorted(d.decision for d in mem.decisions) == [
        "Session tokens are stored in an httpOnly cookie rather than localStorage.",
        "Session tokens now use crypto.randomUUID() instead of SHA-256 of a timestamp.",
        "We'll use pandas instead of the csv module: the files are small.",
    ]
    conn = sqlite3.connect(paths.index_db)
    try:
        ((retired, by),) = conn.execute(
            "SELECT retired_ns, retired_by FROM mem_decisions WHERE decision LIKE 'Stream rows%'"
        )
    finally:
        conn.close()
    assert retired > 0 and by
    # Retired, it stays searchable; the MCP tool lists only the decisions in force.
    out = run_cli("search", "stdlib csv", "--kind", "decision", "--state-dir", str(paths.root))
    assert out.returncode == 0 and "module instead of pandas" in out.stdout
    from summarizer.mcp.tools import decisions_tool

    listed = decisions_tool(paths)
    assert "pandas instead of the csv module" in listed and "Stream rows" not in listed


def test_stating_a_retired_decision_again_puts_it_back_in_force(tmp_path: Path) -> None:
    _, mem = _memory(tmp_path, [
        stop("We'll use Redis instead of Memcached for the session cache."),
        stop("Reverted to Memcached: we no longer use Redis."),
        stop("We'll use Redis instead of Memcached for the session cache."),
    ])  # fmt: skip
    texts = [d.decision for d in mem.decisions]
    assert texts[0] == "We'll use Redis instead of Memcached for the session cache."
    assert "Reverted to Memcached: we no longer use Redis." not in texts


def test_a_users_sentence_that_gives_something_up_retires_rules_and_choices(
    tmp_path: Path,
) -> None:
    _, mem = _memory(tmp_path, [
        prompt("Always use tabs for indentation. Never touch src/legacy.py."),
        stop("We'll use openpyxl for the xlsx export instead of xlsxwriter."),
        prompt("Use spaces instead of tabs from now on, and don't use openpyxl after all."),
    ])  # fmt: skip
    rules = [c.description for c in mem.constraints]
    assert "Always use tabs for indentation." not in rules
    assert "Never touch src/legacy.py." in rules
    assert mem.decisions == []


@pytest.fixture
def thirteen_rules(tmp_path: Path) -> tuple[StatePaths, Any]:
    rules = [
        f"Never edit the generated file src/gen/module_{i:02d}.py by hand; run make gen instead."
        for i in range(13)
    ]
    return _memory(tmp_path, [prompt(rule) for rule in rules])


def test_the_injection_says_how_many_more_constraints_are_in_force(
    thirteen_rules: tuple[StatePaths, Any],
) -> None:
    _, mem = thirteen_rules
    assert mem.constraints_in_force == 13
    inj = build_injection("", mem, feature_id=None, budget=2000, cfg=CFG, counter=COUNTER)
    shown = len(inj["constraints"])
    assert 0 < shown < 13 and inj["moreConstraints"] == 13 - shown
    from summarizer.memory.inject_cache import render_injection

    text = render_injection(inj)
    assert f"… and {13 - shown} more constraint" in text
    assert "the ctxd MCP tool `decisions` lists them all" in text
    assert COUNTER.count(text) == inj["tokenCount"] <= 2000


def test_the_notes_and_the_startup_memory_say_how_many_more_constraints(
    thirteen_rules: tuple[StatePaths, Any],
) -> None:
    paths, _ = thirteen_rules
    conn = store.connect(paths.index_db)
    try:
        config = Config(resume=Config().resume.__class__(max_tokens=1000))
        state = resume.update_session(conn, paths, config, SESSION, "pre_compact")
    finally:
        conn.close()
    text = (paths.resume / SESSION / "context.md").read_text()
    shown = text.count("- Never edit the generated file")
    assert 0 < shown < 13, text
    assert f"… and {13 - shown} more constraint" in text
    assert COUNTER.count(text) <= 1000
    startup = render_startup(state, COUNTER.count, max_tokens=150)
    shown = startup.count("- Never edit the generated file")
    assert shown < 13 and f"… and {13 - shown} more constraint" in startup
    assert COUNTER.count(startup) <= 150
    assert json.loads((paths.resume / SESSION / "precompact_state.json").read_bytes())[
        "constraints_in_force"
    ] == 13
