"""Claude Code 1.0.x transcripts: subagent lines inline (`isSidechain`) go to their subagent.

The corpus holds four 1.0.x transcripts with subagents (1.0.57, 1.0.98, 1.0.102, 1.0.108; see
PROVENANCE.md). Each is imported with the real `ctxd import`; what each entry must be attributed
to is worked out here independently, with json: a sidechain's lines form a chain by
`parentUuid`, its first line holds the prompt of the Task call that started it, and that call's
PreToolUse entry says which agent it started.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from helpers import CORPUS, run_cli

from indexer.transcripts.sidechains import ORPHAN_PREFIX, Sidechains

TRANSCRIPTS = CORPUS / "transcripts"
VIEWER = "d-kimuson__claude-code-viewer"
OLD = {
    "1.0.57": "conneroisu__templar/chat.jsonl",
    "1.0.98": f"{VIEWER}/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
    "1.0.102": "rickithadi__9line-landing/at-c10513b/chat.jsonl",
    "1.0.108": f"{VIEWER}/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
}

corpus = pytest.mark.skipif(not TRANSCRIPTS.is_dir(), reason=f"no corpus at {CORPUS}")


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _content(rec: dict[str, Any]) -> Any:
    return (rec.get("message") or {}).get("content")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if b.get("type") == "text")


def _subagent_calls(records: list[dict[str, Any]]) -> dict[str, str]:
    """tool_use_id of every tool called inside a sidechain -> the Task call that started it."""
    prompts = {}  # Task prompt -> its tool_use_id
    for rec in records:
        if rec["type"] == "assistant" and not rec.get("isSidechain"):
            for b in _content(rec) or []:
                if b.get("type") == "tool_use" and b["name"] == "Task":
                    prompts[b["input"].get("prompt", "")] = b["id"]
    task_of_line: dict[str, str] = {}
    calls: dict[str, str] = {}
    for rec in records:
        if not rec.get("isSidechain"):
            continue
        if rec.get("parentUuid") is None:
            task = prompts[_text(_content(rec))]  # every chain of these files starts so
        else:
            task = task_of_line[rec["parentUuid"]]
        task_of_line[rec["uuid"]] = task
        for b in _content(rec) if isinstance(_content(rec), list) else []:
            if b.get("type") == "tool_use":
                calls[b["id"]] = task
    return calls


def _import(tmp_path: Path, rel: str) -> tuple[Path, list[dict[str, Any]]]:
    state = tmp_path / ".ctxd"
    path = TRANSCRIPTS / rel
    proc = run_cli("import", str(path), state_dir=state)
    assert proc.returncode == 0, proc.stderr
    return state, _records(path)


def _rows(state: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(state / "index.db") as conn:
        return conn.execute(sql, args).fetchall()


@corpus
@pytest.mark.parametrize("version", sorted(OLD))
def test_sidechain_tool_events_belong_to_the_agent_their_task_call_started(
    tmp_path: Path, version: str
) -> None:
    state, records = _import(tmp_path, OLD[version])
    calls = _subagent_calls(records)
    assert calls, "the transcript has subagent tool calls"
    agent_of_task = dict(
        _rows(state, "SELECT tool_use_id, agent_id FROM entries WHERE event='agent_start'")
    )
    stored = _rows(state, "SELECT tool_use_id, agent_id, hook_event FROM entries")
    inside = [(tid, agent) for tid, agent, _ in stored if tid in calls]
    assert inside, "the subagents' tool results are imported"
    assert all(agent == agent_of_task[calls[tid]] for tid, agent in inside), inside
    main_calls = {
        b["id"]
        for rec in records
        if rec["type"] == "assistant" and not rec.get("isSidechain")
        for b in _content(rec) or []
        if b.get("type") == "tool_use" and b["name"] != "Task"
    }
    assert {agent for tid, agent, _ in stored if tid in main_calls} <= {"main"}


@corpus
@pytest.mark.parametrize("version", sorted(OLD))
def test_a_subagents_instructions_are_no_user_prompt(tmp_path: Path, version: str) -> None:
    state, records = _import(tmp_path, OLD[version])
    instructions = {
        _text(_content(r)) for r in records if r.get("isSidechain") and r.get("parentUuid") is None
    }
    prompts = {t for (t,) in _rows(state, "SELECT text FROM entries WHERE event='prompt'")}
    assert instructions and not prompts & instructions


@corpus
def test_the_hand_back_and_the_title_are_the_users_not_a_subagents(tmp_path: Path) -> None:
    # 1.0.108: the user only ran a slash command; the two subagents' instructions came later.
    state, _ = _import(tmp_path, OLD["1.0.108"])
    pkg = json.loads(run_cli("resume", "5c0375b4", "--json", state_dir=state).stdout)
    assert not pkg["next_action"].startswith(("Examine the package.json", "Analyze the current"))
    # 1.0.98: the first text after the slash command is a subagent's instruction.
    state, _ = _import(tmp_path / "b", OLD["1.0.98"])
    pkg = json.loads(run_cli("resume", "fe5e1c67", "--json", state_dir=state).stdout)
    assert not pkg["session"]["title"].startswith("Create React components")


@corpus
def test_read_shows_a_subagents_own_tool_calls(tmp_path: Path) -> None:
    state, records = _import(tmp_path, OLD["1.0.98"])
    calls = _subagent_calls(records)
    [(agent, task)] = _rows(
        state,
        "SELECT agent_id, tool_use_id FROM entries WHERE event='agent_start'"
        " AND description='Build TODO components'",
    )
    out = json.loads(
        run_cli("read", "--agent-id", agent, "--lines", "1000", state_dir=state).stdout
    )
    shown = {e.get("tool_use_id") for e in out["entries"]} - {task}
    assert shown == {tid for tid, t in calls.items() if t == task}


# --- the chain rules on their own ------------------------------------------------------------


def _raw(**fields: str) -> Any:
    import msgspec

    return msgspec.Raw(json.dumps(fields).encode())


def test_a_chain_is_tied_by_its_prompt_not_its_position() -> None:
    s = Sidechains()
    s.task_called("toolu_a", _raw(prompt="Build the API", subagent_type="coder"))
    s.task_called("toolu_b", _raw(prompt="Build the UI"))
    assert s.agent_of("u1", None, "Build the UI") == ("toolu_b", "general-purpose")
    assert s.agent_of("u2", "u1", None) == ("toolu_b", "general-purpose")
    assert s.agent_of("u3", None, "Build the API") == ("toolu_a", "coder")
    assert s.agent_of("u4", "u2", None) == ("toolu_b", "general-purpose")


def test_an_altered_prompt_takes_the_oldest_unclaimed_call() -> None:
    s = Sidechains()
    s.task_called("toolu_a", _raw(prompt="one"))
    s.task_called("toolu_b", _raw(prompt="two"))
    assert s.agent_of("u1", None, "  two  ")[0] == "toolu_b"  # whitespace aside, the same
    assert s.agent_of("u2", None, "something else")[0] == "toolu_a"


def test_a_chain_whose_start_was_not_seen_is_one_unknown_subagent() -> None:
    s = Sidechains()
    first = s.agent_of("u7", "u6", None)
    assert first == (ORPHAN_PREFIX + "u7", "")
    assert s.agent_of("u8", "u7", None) == first
