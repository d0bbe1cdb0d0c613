"""SessionStart in Codex CLI through the real hook (`--host codex`): the notes within Codex's
10,000-byte limit, once after a compaction, and what the rollout says about the live thread."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from codex_fixture import recorded_session
from helpers import HOOK_CMD, hook_env, payload, run_hook

from summarizer.resume.codex_handback import (
    CODEX_MAX_CONTEXT_BYTES,
    COMPACT_FOLLOWS,
    cap_bytes,
    compaction_just_ran,
    live_context,
)

SID = "01a2340e-8f25-7850-9e05-fd46076aa20c"
NOTES = "ctxd notes for session x\n" + ("é" * 79 + "\n") * 120  # 9,624 characters, 19,104 bytes


def _hook(data: bytes, state: Path, host: str = "codex") -> bytes:
    argv = [*HOOK_CMD, "--host", host] if host else list(HOOK_CMD)
    done = subprocess.run(argv, input=data, env=hook_env(state), capture_output=True,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _prebuilt(state: Path, text: str) -> None:
    folder = state / "resume" / SID
    folder.mkdir(parents=True, mode=0o700)
    state.chmod(0o700)
    (state / "resume").chmod(0o700)
    (folder / "precompact_state.json").write_text(
        json.dumps({"confidence": "high", "covers_ns": 2**62})
    )
    (folder / "context.md").write_text(text)


def _context(stdout: bytes) -> str:
    return str(json.loads(stdout)["hookSpecificOutput"]["additionalContext"])


def test_codex_gets_the_notes_within_its_limit_and_claude_code_whole(tmp_path: Path) -> None:
    start = payload(session_id=SID, hook_event_name="SessionStart", source="compact")
    for host, state in (("codex", tmp_path / "codex"), ("", tmp_path / "claude")):
        _prebuilt(state, NOTES)
        text = _context(_hook(start, state, host))
        if host:
            assert len(text.encode()) <= CODEX_MAX_CONTEXT_BYTES
            assert NOTES.startswith(text) and text.endswith("é")  # cut at a line's end
        else:
            assert text == NOTES.rstrip("\n") or text == NOTES


def test_cap_bytes_never_splits_a_character() -> None:
    assert cap_bytes("ab", 10) == "ab"
    assert cap_bytes("aé" * 10, 5) == "aéa"  # 4 bytes: the next é would not fit whole
    assert cap_bytes("line one is long\nline two", 20) == "line one is long"
    assert cap_bytes("short\nline two is longer", 20) == "short\nline two is lo"  # no late line end


def test_the_rollout_tells_a_compacted_thread_and_notes_since(tmp_path: Path) -> None:
    session = recorded_session(tmp_path)
    rollout = session.main_rollout()
    live = live_context(str(rollout))
    assert live is not None and (live.compacted, live.notes_since) == (True, False)
    note = {"type": "message", "role": "developer",
            "content": [{"type": "input_text", "text": "ctxd notes for session y"}]}  # fmt: skip
    with rollout.open("a") as f:
        f.write(
            json.dumps({"type": "response_item", "payload": note}, separators=(",", ":")) + "\n"
        )
    live = live_context(str(rollout))
    assert live is not None and (live.compacted, live.notes_since) == (True, True)
    assert live_context(str(tmp_path / "missing.jsonl")) is None


def test_a_resume_right_after_a_compaction_leaves_the_notes_to_compact(tmp_path: Path) -> None:
    # Codex resumes a thread due for compaction: PreCompact, PostCompact, SessionStart "resume",
    # then SessionStart "compact". The rollout shows a compaction with no notes since, which
    # alone would make "resume" hand the notes back, and "compact" again.
    session = recorded_session(tmp_path)
    state = tmp_path / "state"
    by_event = {p["hook_event_name"] + p.get("source", ""): p for p in session.payloads}
    for name in ("UserPromptSubmit", "PreCompact", "PostCompact"):
        _hook(json.dumps(by_event[name]).encode(), state)
    _prebuilt_state = state / "resume" / SID
    _prebuilt_state.mkdir(parents=True, mode=0o700, exist_ok=True)  # PreCompact made it
    (_prebuilt_state / "precompact_state.json").write_text(
        json.dumps({"confidence": "high", "covers_ns": 2**62})
    )
    (_prebuilt_state / "context.md").write_text("ctxd notes for session x\nwork in progress\n")
    assert compaction_just_ran(str(state), SID)
    assert _hook(json.dumps(by_event["SessionStartresume"]).encode(), state) == b""
    assert not compaction_just_ran(str(state), "another-session")
    text = _context(_hook(json.dumps(by_event["SessionStartcompact"]).encode(), state))
    assert text.startswith("ctxd notes for session x")
    log = [json.loads(line) for line in (_prebuilt_state / "starts.jsonl").read_text().splitlines()]
    assert [(r["source"], r["injected"]) for r in log] == [("resume", False), ("compact", True)]
    assert log[0]["reason"] == COMPACT_FOLLOWS


def test_a_claude_code_session_start_is_unchanged_by_hosts(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _prebuilt(state, "ctxd notes for session x\nshort\n")
    start = payload(session_id=SID, hook_event_name="SessionStart", source="compact")
    assert _context(run_hook(start, hook_env(state)).stdout) == "ctxd notes for session x\nshort\n"
