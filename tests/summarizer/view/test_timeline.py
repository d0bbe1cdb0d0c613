"""The session timeline fold: calls merged with results, lanes, and what fixed each failure."""

from __future__ import annotations

import json

import msgspec

from indexer.index.store import StoredEntry
from indexer.models import Entry
from indexer.queries.sessions import AgentRow
from summarizer.view.timeline import build_timeline

_n = iter(range(1, 1000))


def _e(event: str, agent: str = "main", **kw: object) -> StoredEntry:
    n = next(_n)
    command = kw.pop("command", None)
    detail = json.dumps({"input": {"command": command}}).encode() if command else b""
    entry = Entry(
        file_id=1,
        offset=n,
        line_no=n,
        ts_ns=n,
        pid=1,
        session_id="s",
        hook_event=event,
        event=event,
        agent_id=agent,
        detail=msgspec.Raw(detail),
        **kw,  # type: ignore[arg-type]
    )
    return StoredEntry(n, entry)


def _call(tool: str, tid: str, result: str, agent: str = "main", **kw: object) -> list[StoredEntry]:
    return [
        _e("tool_use", agent, tool_name=tool, tool_use_id=tid, **kw),
        _e(result, agent, tool_name=tool, tool_use_id=tid, **kw),
    ]


def test_fix_is_the_next_pass_of_the_same_command_and_the_edits_after_the_last_failure() -> None:
    entries = [
        *_call("Bash", "t1", "tool_failure", command="pytest", error="Exit code 1\nboom"),
        *_call("Edit", "t2", "tool_result", files=("a.py",)),
        *_call("Bash", "t3", "tool_failure", command="pytest", error="Exit code 1\nboom"),
        *_call("Bash", "t4", "tool_result", command="ls"),  # another command: not the fix
        *_call("Edit", "t5", "tool_result", files=("b.py",)),
        *_call("Bash", "t6", "tool_result", command="pytest"),
        *_call("Bash", "t7", "tool_failure", command="make", error="Exit code 2"),
    ]
    tl = build_timeline(entries, [])
    failed = tl.failures()
    assert [f.command for f in failed] == ["pytest", "pytest", "make"]
    passing = next(i for i in tl.items if i.command == "pytest" and i.status == "ok")
    for f in failed[:2]:
        assert f.fix is not None and f.fix.entry_id == passing.entry_id
        assert f.fix.changes == ("Edit b.py",)  # only what changed after the last failure
    assert failed[2].fix is not None and failed[2].fix.entry_id == 0  # never fixed
    assert len(tl.items) == 7  # each call and its result are one row


def test_agent_calls_sit_in_main_and_start_the_agent_lane() -> None:
    agents = [AgentRow("bg-1", "general-purpose", "cc1", False, 5, 0, "running", "scan")]
    entries = [
        _e("agent_start", "bg-1", tool_name="Agent", tool_use_id="a1", instruction="scan it"),
        _e("subagent_start", "bg-1", description="subagent started"),
        _e("agent_launched", "bg-1", tool_name="Agent", tool_use_id="a1"),
        *_call("Read", "r1", "tool_result", agent="bg-1", files=("x.py",)),
        _e("subagent_stop", "bg-1", output_summary="done scanning"),
    ]
    tl = build_timeline(entries, agents)
    assert [lane.lane_id for lane in tl.lanes] == ["main", "bg-1"]
    launch = tl.items[0]
    assert launch.lane == "main" and launch.launches == "bg-1" and launch.status == "ok"
    assert [i.lane for i in tl.items[1:]] == ["bg-1"] * 3
    assert tl.lanes[1].instruction == "scan it" and tl.lanes[1].outcome == "done scanning"
