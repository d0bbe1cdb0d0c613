"""SubagentStart handoff through the real hook: own last run, task export, nothing, pairing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import HOOK_CMD, REPO, hook_env, payload, run_cli, run_hook

from summarizer.cli.commands.demo_session import DEMO_SESSION_ID, demo_session
from summarizer.common.tokens import get_counter
from summarizer.handoff.names import names_in

SID2 = "second-session-0001"


def _agent_call(state: Path, prompt: str, agent_type: str, tool_use_id: str) -> None:
    call = payload(
        session_id=SID2,
        hook_event_name="PreToolUse",
        tool_name="Agent",
        tool_use_id=tool_use_id,
        tool_input={"description": "d", "prompt": prompt, "subagent_type": agent_type},
    )
    out = run_hook(call, hook_env(state))
    assert out.returncode == 0 and out.stdout == b""  # a tool-event hook prints nothing


def _start_payload(agent_type: str, cc_id: str) -> bytes:
    return payload(
        session_id=SID2, hook_event_name="SubagentStart", agent_id=cc_id, agent_type=agent_type
    )


def _subagent_start(state: Path, agent_type: str, cc_id: str) -> str:
    """The additionalContext the hook hands this subagent ("" when it prints nothing)."""
    out = run_hook(_start_payload(agent_type, cc_id), hook_env(state))
    assert out.returncode == 0
    return _context(out.stdout)


def _context(stdout: bytes) -> str:
    if not stdout.strip():
        return ""
    doc = json.loads(stdout)
    assert doc["hookSpecificOutput"]["hookEventName"] == "SubagentStart"
    return str(doc["hookSpecificOutput"]["additionalContext"])


def _replay(state: Path, events: list[dict[str, object]]) -> None:
    env = hook_env(state)
    for event in events:
        assert run_hook(json.dumps(event).encode(), env).returncode == 0


@pytest.fixture
def ran_before(tmp_path: Path) -> Path:
    """State where the demo session ran (arch-001 among its agents), replayed by the hook,
    then indexed by a read command (as the daemon would)."""
    state = tmp_path / "state"
    # Without its PreCompact: that would start a detached builder racing the reader.
    _replay(state, demo_session(str(tmp_path / "proj"))[:-1])
    assert run_cli("sessions", state_dir=state).returncode == 0
    return state


def test_the_hook_writes_the_account_when_the_named_agent_stops(tmp_path: Path) -> None:
    # No daemon, no read command: the SubagentStop hook itself leaves the account.
    state = tmp_path / "state"
    events = demo_session(str(tmp_path / "proj"))
    stop = next(i for i, e in enumerate(events) if e["hook_event_name"] == "SubagentStop")
    _replay(state, events[: stop + 1])
    account = (state / "handoff" / "agents" / "arch-001.md").read_text()
    assert "Design the CSV export API for the reports page" in account
    assert "stream rows with the stdlib csv module" in account
    _agent_call(state, "AgentId: arch-001\nAgain.", "Plan", "toolu_2z")
    assert _subagent_start(state, "Plan", "a0000000000000ff").startswith(account.strip()[:60])


def test_named_agent_gets_its_own_last_run(ran_before: Path) -> None:
    _agent_call(ran_before, "AgentId: arch-001\nRevise the export design.", "Plan", "toolu_2a")
    text = _subagent_start(ran_before, "Plan", "a0000000000000aa")
    assert "agent arch-001" in text and DEMO_SESSION_ID[:8] in text
    assert "Design the CSV export API for the reports page" in text  # its instruction
    assert "stream rows with the stdlib csv module" in text  # its outcome
    assert "src/reports.py (read)" in text  # its files
    assert "AgentId:" not in text
    assert get_counter().count(text) <= 1500
    # The marker is consumed: a second start of the same type gets nothing.
    assert _subagent_start(ran_before, "Plan", "a0000000000000ab") == ""


def test_agent_naming_nothing_gets_nothing(ran_before: Path) -> None:
    _agent_call(ran_before, "List the python files.", "general-purpose", "toolu_2b")
    assert _subagent_start(ran_before, "general-purpose", "a0000000000000ac") == ""


def test_a_name_that_never_ran_gets_nothing(ran_before: Path) -> None:
    _agent_call(ran_before, "AgentId: newcomer-7\nLook around.", "Plan", "toolu_2c")
    assert _subagent_start(ran_before, "Plan", "a0000000000000ad") == ""


def test_pairing_follows_type_and_call_order(ran_before: Path) -> None:
    # An unnamed general-purpose call first, then arch-001 (Plan): the Plan subagent gets
    # arch-001's handoff although another call came first; the other gets nothing.
    _agent_call(ran_before, "Count the lines.", "general-purpose", "toolu_2d")
    _agent_call(ran_before, "AgentId: arch-001\nAgain.", "Plan", "toolu_2e")
    assert "agent arch-001" in _subagent_start(ran_before, "Plan", "a0000000000000ae")
    assert _subagent_start(ran_before, "general-purpose", "a0000000000000af") == ""


def test_parallel_starts_each_get_one_handoff(ran_before: Path) -> None:
    # Four calls of one type, two named: four subagents starting at once (background or
    # parallel agents) claim four different markers; arch-001's account goes out exactly twice.
    prompts = ["AgentId: arch-001\nA", "B", "AgentId: arch-001\nC", "D"]
    for n, prompt in enumerate(prompts):
        _agent_call(ran_before, prompt, "Plan", f"toolu_3{n}")
    procs = [
        subprocess.Popen(
            HOOK_CMD,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=hook_env(ran_before),
        )
        for _ in prompts
    ]
    outs = [
        _context(p.communicate(_start_payload("Plan", f"a00000000000010{n}"))[0])
        for n, p in enumerate(procs)
    ]
    assert sum("agent arch-001" in o for o in outs) == 2
    assert sum(o == "" for o in outs) == 2
    assert not list(
        (ran_before / "handoff" / "sessions" / SID2).glob("p-*")
    )  # every marker claimed


def _task(state: Path, export_size: int) -> None:
    folder = state / "tasks" / "TASK-0824"
    folder.mkdir(parents=True)
    export = {
        "version": 1,
        "task_id": "TASK-0824",
        "role": "reviewer",
        "previous_role": "implementer",
        "task_snapshot": {
            "title": "Stream the CSV export",
            "description": "word " * export_size,
            "acceptance_criteria": ["exports over 1 GB stream in constant memory"],
        },
    }
    (folder / "context-reviewer.json").write_text(json.dumps(export, indent=2))
    snap = {
        "base_commit": "0123456789abcdef0123",
        "snapshot_time": "2026-11-25T14:00:00Z",
        "files_changed": [{"path": "src/export.py", "sha256": "ab", "status": "M"}],
        "diff_stat": " src/export.py | 12 +++++++-----",
        "scope_hash": "feedfacefeedface00",
    }
    context = {
        "task_id": "TASK-0824",
        "coordination": {
            "implementer": {"status": "done", "worktree_snapshot": snap},
            "reviewer": {"status": "pending"},
        },
    }
    (folder / "context.json").write_text(json.dumps(context))


def test_task_and_role_get_the_export_and_previous_snapshot(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _agent_call(state, "x", "general-purpose", "toolu_0")  # creates the state directory
    _subagent_start(state, "general-purpose", "a0000000000001aa")
    _task(state, 10)
    _agent_call(
        state, "Task: TASK-0824\nRole: reviewer\nReview the change.", "general-purpose", "toolu_4a"
    )
    text = _subagent_start(state, "general-purpose", "a0000000000001ab")
    assert "TASK-0824, role reviewer" in text and "Stream the CSV export" in text
    assert "exports over 1 GB stream in constant memory" in text
    assert "The implementer finished with status done" in text
    assert "src/export.py | 12" in text and "0123456789ab" in text


def test_a_large_export_is_cut_to_the_token_budget(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _agent_call(state, "x", "general-purpose", "toolu_0")
    _subagent_start(state, "general-purpose", "a0000000000001aa")
    _task(state, 5000)
    _agent_call(state, "Task: TASK-0824\nRole: reviewer\n", "general-purpose", "toolu_5a")
    text = _subagent_start(state, "general-purpose", "a0000000000001ac")
    assert "TASK-0824, role reviewer" in text
    # Cut without the tokenizer (a tool event's hook never loads it): at most 1,500 bytes.
    assert 1400 < len(text.encode()) <= 1500 and get_counter().count(text) <= 1500


def test_a_missing_export_gives_nothing(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _agent_call(state, "Task: TASK-0999\nRole: reviewer\n", "general-purpose", "toolu_6a")
    assert _subagent_start(state, "general-purpose", "a0000000000001ad") == ""


@pytest.mark.parametrize(
    "prompt",
    ["Task: ../../etc\nRole: reviewer", "Task: .hidden\nRole: reviewer", "Task: a/b\nRole: x"],
)
def test_task_names_that_are_not_safe_path_parts_are_ignored(prompt: str) -> None:
    assert names_in(prompt).task_id is None


def test_readers_write_accounts_too(tmp_path: Path) -> None:
    # Without the detached builder (no SubagentStop hook seen), any read command's catch-up
    # writes the account.
    state = tmp_path / "state"
    # No SubagentStop and no PreCompact: the hook starts no detached builder.
    skipped = ("SubagentStop", "PreCompact")
    events = [e for e in demo_session(str(tmp_path / "p")) if e["hook_event_name"] not in skipped]
    _replay(state, events)
    assert run_cli("sessions", state_dir=state).returncode == 0
    text = (state / "handoff" / "agents" / "arch-001.md").read_text()
    assert "stream rows with the stdlib csv module" in text  # from the Agent tool's result


def test_the_stop_hook_keeps_a_fuller_account_of_the_same_run(ran_before: Path) -> None:
    # The daemon may index the run's end and write the full account before the SubagentStop
    # hook writes its short one: the short one must not replace it.
    _agent_call(ran_before, "AgentId: arch-001\nOnce more.", "Plan", "toolu_7a")
    _subagent_start(ran_before, "Plan", "a0000000000007aa")
    account = ran_before / "handoff" / "agents" / "arch-001.md"
    account.write_text("full account of this run\n")  # written after the call: newer
    stop = payload(
        session_id=SID2,
        hook_event_name="SubagentStop",
        agent_id="a0000000000007aa",
        agent_type="Plan",
        last_assistant_message="Short outcome.",
    )
    assert run_hook(stop, hook_env(ran_before)).returncode == 0
    assert account.read_text() == "full account of this run\n"
    # An account from before the call is replaced by this run's.
    _agent_call(ran_before, "AgentId: arch-001\nAnd again.", "Plan", "toolu_7b")
    _subagent_start(ran_before, "Plan", "a0000000000007ab")
    stop = stop.replace(b"a0000000000007aa", b"a0000000000007ab")
    assert run_hook(stop, hook_env(ran_before)).returncode == 0
    assert 'Its last answer, as recorded: "Short outcome."' in account.read_text()
    assert 'Its instruction then: "And again."' in account.read_text()


def test_the_budget_is_the_configured_one(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _agent_call(state, "x", "general-purpose", "toolu_0")
    _subagent_start(state, "general-purpose", "a0000000000001aa")
    (state / "config.toml").write_text("[resume]\nsubagent_max_tokens = 300\n")
    _task(state, 5000)
    _agent_call(state, "Task: TASK-0824\nRole: reviewer\n", "general-purpose", "toolu_8a")
    text = _subagent_start(state, "general-purpose", "a0000000000008aa")
    assert "TASK-0824, role reviewer" in text
    assert 150 < len(text.encode()) <= 300 and get_counter().count(text) <= 300


@pytest.mark.parametrize("event", ["PostToolUseFailure", "PermissionDenied"])
def test_a_call_that_started_no_subagent_leaves_nothing_behind(
    ran_before: Path, event: str
) -> None:
    _agent_call(ran_before, "AgentId: arch-001\nDenied.", "Plan", "toolu_9a")
    failed = payload(
        session_id=SID2,
        hook_event_name=event,
        tool_name="Agent",
        tool_use_id="toolu_9a",
        tool_input={"prompt": "AgentId: arch-001\nDenied.", "subagent_type": "Plan"},
        error="The user doesn't want to proceed with this tool use.",
        reason="denied",
    )
    out = run_hook(failed, hook_env(ran_before))
    assert out.returncode == 0 and out.stdout == b""
    # The next Plan subagent, from a call naming nothing, must not get arch-001's handoff.
    _agent_call(ran_before, "Plan the docs.", "Plan", "toolu_9b")
    assert _subagent_start(ran_before, "Plan", "a0000000000009aa") == ""


def test_the_hook_branches_load_no_heavy_module(tmp_path: Path) -> None:
    # I1: a tool event's hook never loads tiktoken, msgspec or sqlite3, even for a large export.
    state = tmp_path / "state"
    _agent_call(state, "x", "general-purpose", "toolu_0")
    _subagent_start(state, "general-purpose", "a0000000000001aa")
    _task(state, 5000)
    call = payload(
        session_id=SID2,
        hook_event_name="PreToolUse",
        tool_name="Agent",
        tool_use_id="toolu_h",
        tool_input={"prompt": "AgentId: arch-001\nTask: TASK-0824\nRole: reviewer\n"},
    )
    start = _start_payload("general-purpose", "a00000000000abcd")
    stop = payload(session_id=SID2, hook_event_name="SubagentStop", agent_id="a00000000000abcd")
    code = (
        "import sys; from ctxd_hook.hook import respond;"
        f"[respond(p, {str(state)!r}) for p in {[call, start, stop]!r}];"
        "print(sorted({'tiktoken', 'msgspec', 'sqlite3'} & set(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.splitlines()[-1] == "[]", out.stdout
    assert (state / "handoff" / "sessions" / SID2).is_dir()


def test_a_secret_in_a_named_agents_prompt_or_outcome_is_never_kept_or_handed_over(
    tmp_path: Path,
) -> None:
    # The queue and the accounts live outside the spool, so they hold only redacted text.
    state = tmp_path / "state"
    key = "AKIA" + "Q7XW2ZK5JH3MN4PB"  # an AWS access key id shape, split so no scanner trips
    _agent_call(state, f"AgentId: deployer-1\nDeploy with {key} now.", "general-purpose", "tu_1")
    assert _subagent_start(state, "general-purpose", "a00000000000000a") == ""  # never ran
    stop = payload(
        session_id=SID2,
        hook_event_name="SubagentStop",
        agent_id="a00000000000000a",
        agent_type="general-purpose",
        last_assistant_message=f"Deployed; the key {key} worked.",
    )
    assert run_hook(stop, hook_env(state)).returncode == 0
    account = (state / "handoff" / "agents" / "deployer-1.md").read_text()
    assert "Deploy with" in account and "[REDACTED" in account
    _agent_call(state, "AgentId: deployer-1\nAgain.", "general-purpose", "tu_2")
    handed = _subagent_start(state, "general-purpose", "a00000000000000b")
    assert "Deployed; the key" in handed and key not in handed
    outside_spool = [
        p
        for p in state.rglob("*")
        if p.is_file()
        and "spool" not in p.relative_to(state).parts
        and key.encode() in p.read_bytes()
    ]
    assert outside_spool == []
