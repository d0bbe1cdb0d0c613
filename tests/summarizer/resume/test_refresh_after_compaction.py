"""Every compaction refreshes the resume states: the daemon's, the CLI's and ContextAgent's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import poll, run_cli
from memory_helpers import SESSION, bash, edit, prompt, spool
from resume_story import Daemons

import summarizer
from indexer.index import store
from indexer.paths import StatePaths


@pytest.fixture
def daemons() -> Iterator[Daemons]:
    d = Daemons()
    yield d
    d.stop_all()


def _work(state: Path, n: int) -> None:
    """Round `n` of a session at work (no PreCompact nor SessionEnd: only a compaction's
    refresh writes its resume state)."""
    spool(
        state,
        [
            prompt(f"Never use tabs in src/app_{n}.py."),
            *bash(f"pytest tests/test_app_{n}.py", f"toolu_bash{n:04d}"),
            edit(f"src/app_{n}.py", f"value = {n}\n", f"toolu_edit{n:04d}"),
        ],
    )


def _state(state: Path) -> dict[str, Any]:
    """The session's precompact_state.json ({} while there is none)."""
    try:
        doc = json.loads((StatePaths(state).resume / SESSION / "precompact_state.json").read_text())
    except (OSError, ValueError):
        return {}
    return dict(doc)


def _newest_entry(state: Path) -> int:
    conn = store.connect(StatePaths(state).index_db, readonly=True)
    try:
        return store.max_entry_id(conn)
    finally:
        conn.close()


def _assert_current(state: Path, step: int) -> None:
    """The state covers the session's newest event, and names the file of round `step`."""
    doc = _state(state)
    assert doc, "no resume state was written after the compaction"
    assert doc["trigger"] == "compaction"
    assert doc["watermark"] == _newest_entry(state)
    assert f"src/app_{step}.py" in json.dumps(doc["last_tool_calls"])


# Commands that compact in their own process when no daemon runs, each with the arguments that
# make it compact (new events wait in the spool).
_COMMANDS = {
    "compact": ("compact",),
    "inject": ("inject",),
    "search": ("search", "tabs"),
    "emit --revoke": (
        "emit",
        "constraint",
        "--revoke",
        "Never use tabs in src/app_{n}.py.",
    ),
}


@pytest.mark.parametrize("command", list(_COMMANDS), ids=list(_COMMANDS))
def test_a_cli_compaction_refreshes_the_resume_states(tmp_path: Path, command: str) -> None:
    state = tmp_path / "state"
    for n in (1, 2):
        _work(state, n)
        args = [a.format(n=n) for a in _COMMANDS[command]]
        done = run_cli(*args, "--state-dir", str(state))
        assert done.returncode == 0, done.stderr
        _assert_current(state, n)  # written, then rewritten with the new events


def test_context_agent_compactions_refresh_the_resume_states(tmp_path: Path) -> None:
    state = tmp_path / "state"
    agent = summarizer.ContextAgent(state_dir=state)
    _work(state, 1)
    assert agent.summarize()["success"] is True
    _assert_current(state, 1)
    _work(state, 2)
    assert "error" not in agent.get_injection()  # compacts first: new events wait
    _assert_current(state, 2)


def test_the_daemons_compactions_refresh_the_resume_states(
    tmp_path: Path, daemons: Daemons
) -> None:
    state = tmp_path / "state"
    _work(state, 1)
    daemons.start(state)  # its startup run compacts what waits
    poll(lambda: _state(state).get("watermark") == _newest_entry(state), timeout=30)
    _assert_current(state, 1)
    _work(state, 2)
    done = run_cli("compact", "--state-dir", str(state))  # asks the daemon (I8)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("the daemon compacted")
    poll(lambda: _state(state).get("watermark") == _newest_entry(state), timeout=30)
    _assert_current(state, 2)
