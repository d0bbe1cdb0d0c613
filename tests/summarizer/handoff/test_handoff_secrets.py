"""An Agent call's `subagent_type` is text the model writes: a secret in it never reaches a file
under the state directory outside the spool (the handoff queue, the index, the views); the
handoff queue keeps neither it nor the call's id as written, and still pairs the call with the
subagent that starts."""

from __future__ import annotations

from pathlib import Path

from helpers import hook_env, payload, run_cli, run_hook

SID = "secret-type-session-01"
# Fake tokens of real shapes (a GitHub token, an AWS key id).
TYPE_SECRET = "ghp_" + "Zq7Kd9Lm2Np4Rs6Tv8Wx0Yb1Cf3Gh5Jk7Mn9P"
CALL_SECRET = "AKIA" + "Q7ZK4M2N9P3R5T6V"


def _run(state: Path, **fields: object) -> bytes:
    out = run_hook(payload(session_id=SID, **fields), hook_env(state))
    assert out.returncode == 0
    return out.stdout


def _files_outside_spool(state: Path) -> list[Path]:
    return [p for p in state.rglob("*") if p.is_file() and "spool" not in p.parts]


def test_a_secret_in_the_subagent_type_or_call_id_is_not_stored(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _run(state, hook_event_name="UserPromptSubmit", prompt="plan the export")
    agent_type = f"reviewer {TYPE_SECRET}"
    call = {"description": "d", "prompt": "AgentId: arch-001\nPlan it.", "subagent_type": agent_type}
    _run(state, hook_event_name="PreToolUse", tool_name="Agent", tool_use_id=CALL_SECRET,
         tool_input=call)
    queued = list((state / "handoff" / "sessions" / SID).glob("p-*.json"))
    assert len(queued) == 1
    marker = queued[0].read_bytes()
    assert b"arch-001" in marker  # the marker of this call (the check can fail)
    assert TYPE_SECRET.lower().encode() not in marker.lower()  # it was kept lower-cased
    assert CALL_SECRET.encode() not in marker
    # A secret-free call of another type: still paired by its type, as before.
    plain = {"description": "d", "prompt": "AgentId: arch-002\nTest it.", "subagent_type": "Plan"}
    _run(state, hook_event_name="PreToolUse", tool_name="Agent", tool_use_id="toolu_01plain",
         tool_input=plain)
    _run(state, hook_event_name="SubagentStart", agent_id="a00000000000000e", agent_type="Plan")
    claimed = list((state / "handoff" / "sessions" / SID).glob("n-*-a00000000000000e.json"))
    assert len(claimed) == 1  # the Plan call's marker, not the first one
    # A failed call is still dropped by its id.
    _run(state, hook_event_name="PostToolUseFailure", tool_name="Agent",
         tool_use_id=CALL_SECRET, tool_input=call, error="denied")
    assert not list((state / "handoff" / "sessions" / SID).glob("p-*.json"))
    r = run_cli("ingest", state_dir=state)
    assert r.returncode == 0, r.stderr
    outputs = [r.stdout + r.stderr]
    for args in (("read", "--agent-id", "arch-001", "--format", "text"),
                 ("read", "--agent-id", "main", "--format", "json"), ("sessions",)):
        r = run_cli(*args, state_dir=state)
        outputs.append(r.stdout + r.stderr)
    files = _files_outside_spool(state)
    assert any(p.name == "index.db" for p in files)
    leaked = [str(p.relative_to(state)) for p in files if TYPE_SECRET.encode() in p.read_bytes()]
    assert leaked == []
    assert not any(TYPE_SECRET in o for o in outputs), outputs
    # The spool keeps the raw events (the check can fail).
    assert any(TYPE_SECRET.encode() in p.read_bytes() for p in (state / "spool").iterdir())
    # The handoff queue keeps no call id as written (the index keeps tool_use_id, the key of
    # its dedupe, which Claude Code generates).
    queue = [p for p in files if "handoff" in p.parts]
    assert queue
    assert [p.name for p in queue if CALL_SECRET.encode() in p.read_bytes()] == []
