"""The SessionStart hook's output path in process: session_start_output on real state files.

The subprocess tests (test_resume_hook.py, test_handback.py) run the hook as Claude Code does;
these call the same functions in this process, on a real state directory, spool and index,
so that each decision and the exact JSON printed are checked where a test can see them.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import payload

from ctxd_hook.hook import build_line
from indexer.paths import StatePaths
from indexer.writer.catch_up import writer_lock
from summarizer.resume import spawn, spool_tail
from summarizer.resume.files import lock_folder
from summarizer.resume.handback import REPEATED_COMPACT
from summarizer.resume.hook import (
    claim_context,
    plan_session_start,
    read_settings,
    record_compaction,
    session_start_output,
    take_context,
)

SID = "4a5be60a-1b2d-4c3e-9f40-5a6b7c8d9e01"
OTHER = "5b6cf71b-2c3e-4d4f-8a51-6b7c8d9e0f12"
TRANSCRIPT = "/home/dev/.claude/projects/-home-dev-app/4a5be60a.jsonl"
NOTES = "ctxd notes for session 4a5be60a: fix the CSV export\n- next: style the button\n"
# No build may run unless a test asks for one: a tenth of a second is below the build's floor.
NO_BUILD = "[resume]\nprebuild = false\nbuild_timeout_s = 0.05\n"
BUILD = "[resume]\nprebuild = false\nbuild_timeout_s = 60.0\n"


def _state(tmp_path: Path, config: str = NO_BUILD) -> Path:
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    (paths.root / "config.toml").write_text(config)
    return paths.root


def _event(source: str | None = "compact", session_id: object = SID, **extra: Any) -> bytes:
    fields: dict[str, Any] = {
        "session_id": session_id,
        "transcript_path": TRANSCRIPT,
        "cwd": "/home/dev/app",
        "hook_event_name": "SessionStart",
    }
    if source is not None:
        fields["source"] = source
    fields.update(extra)
    return json.dumps(fields, separators=(",", ":")).encode()


def _spool(state: Path, ts_ns: int, session_id: str = SID, **fields: Any) -> None:
    name = time.strftime("%Y%m%dT%H", time.gmtime()) + ".jsonl"
    line = build_line(payload(session_id=session_id, **fields), ts_ns, 9)
    with open(state / "spool" / name, "ab") as f:
        f.write(line)


def _prompt(state: Path, text: str, ts_ns: int, session_id: str = SID) -> None:
    _spool(state, ts_ns, session_id, hook_event_name="UserPromptSubmit", prompt=text)


def _prebuilt(
    state: Path,
    text: str = NOTES,
    session_id: str = SID,
    *,
    covers_ns: int = 0,
    confidence: str = "high",
    trigger: str = "pre_compact",
) -> Path:
    """A resume folder as the writer leaves it: the state, then its unconsumed context."""
    folder = state / "resume" / session_id
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    doc = {"session_id": session_id, "covers_ns": covers_ns, "confidence": confidence,
           "trigger": trigger}
    (folder / "precompact_state.json").write_text(json.dumps(doc))
    (folder / "context.md").write_text(text)
    return folder


def _latest(state: Path, session_id: str, created_ns: int, trigger: str = "session_end") -> None:
    doc = {"session_id": session_id, "created_ns": created_ns, "trigger": trigger}
    (state / "resume" / "latest.json").write_text(json.dumps(doc))


def _context(out: str) -> str:
    """The additionalContext of the hook's stdout, which must be exactly one JSON line."""
    assert out.endswith("}}\n") and out.count("\n") == 1
    doc = json.loads(out)
    assert doc == {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                          "additionalContext": doc["hookSpecificOutput"]
                                          ["additionalContext"]}}
    return str(doc["hookSpecificOutput"]["additionalContext"])


def _log(state: Path, session_id: str = SID) -> list[dict[str, Any]]:
    path = state / "resume" / session_id / "starts.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


# --- what the hook refuses -----------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b'["SessionStart"]',
        _event(hook_event_name="SessionEnd"),
        _event(session_id=""),
        _event(session_id=".hidden"),
        _event(session_id="_under"),
        _event(session_id="-dash"),
        _event(session_id="a/b"),
        _event(session_id="a" * 129),
        _event(session_id=42),
        _event(source=7),
    ],
    ids=["not-json", "a-list", "another-event", "empty-id", "dot-id", "underscore-id",
         "dash-id", "slash-id", "id-too-long", "id-a-number", "source-a-number"],
)
def test_what_is_not_a_valid_session_start_gets_no_output_and_no_folder(
    tmp_path: Path, data: bytes
) -> None:
    state = _state(tmp_path)
    _prebuilt(state)
    assert session_start_output(data, str(state)) == ""
    assert sorted(p.name for p in (state / "resume").iterdir()) == [SID]
    assert not (state / "resume" / SID / "starts.jsonl").exists()
    assert (state / "resume" / SID / "context.md").exists()  # nothing consumed


def test_ids_of_128_characters_and_inner_punctuation_are_valid(tmp_path: Path) -> None:
    state = _state(tmp_path)
    for session_id in ("a" * 128, "a.b_c-d", "a", "X1"):
        _prebuilt(state, session_id=session_id)
        assert _context(session_start_output(_event(session_id=session_id), str(state))) == NOTES


def test_a_missing_state_directory_gets_no_output(tmp_path: Path) -> None:
    assert session_start_output(_event(), str(tmp_path / "absent")) == ""
    assert not (tmp_path / "absent").exists()


# --- compact: a prebuilt context, once -----------------------------------------------------


def test_compact_hands_the_prebuilt_notes_back_once_and_logs_why(tmp_path: Path) -> None:
    state = _state(tmp_path)
    folder = _prebuilt(state)
    out = session_start_output(_event("compact"), str(state))
    assert out == (
        '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":'
        + json.dumps(NOTES) + "}}\n"
    )
    assert not (folder / "context.md").exists()
    assert (folder / "consumed-context.md").read_text() == NOTES
    [record] = _log(state)
    assert record["source"] == "compact" and record["injected"] is True
    assert record["chars"] == len(NOTES)
    assert record["reason"] == "the conversation was just compacted: the notes go back once (prebuilt)"
    assert record["notes_of"] == SID and record["transcript"] == TRANSCRIPT
    assert oct((folder / "starts.jsonl").stat().st_mode & 0o777) == "0o600"
    assert not (state / "autostart.lock").exists()  # autostart is off unless configured
    # The same compaction again (no event since): nothing, and why.
    assert session_start_output(_event("compact"), str(state)) == ""
    last = _log(state)[-1]
    assert (last["reason"], last["injected"], last["chars"]) == (REPEATED_COMPACT, False, 0)
    assert "notes_of" not in last
    # And again: the repeat logged in between does not make it a new compaction.
    assert session_start_output(_event("compact"), str(state)) == ""
    assert _log(state)[-1]["reason"] == REPEATED_COMPACT


def test_a_new_event_after_a_compaction_makes_the_next_one_hand_back_again(
    tmp_path: Path,
) -> None:
    state = _state(tmp_path)
    now = time.time_ns()
    _prompt(state, "fix the CSV export", now - 10**9)
    _prebuilt(state, covers_ns=now - 10**9)
    assert _context(session_start_output(_event("compact"), str(state))) == NOTES
    # The builder writes the next compaction's notes, covering the event that came since.
    later = time.time_ns()
    _prompt(state, "now style the button", later)
    _prebuilt(state, "second notes\n", covers_ns=later)
    assert _context(session_start_output(_event("compact"), str(state))) == "second notes\n"


def test_a_second_compaction_reads_the_spools_tail_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The repeat check and the notes' freshness both need the session's newest event in the
    # spool: one SessionStart reads the tail once (each spool segment once).
    state = _state(tmp_path)
    now = time.time_ns()
    _prompt(state, "fix the CSV export", now - 10**9)
    _prebuilt(state, covers_ns=now - 10**9)
    assert _context(session_start_output(_event("compact"), str(state))) == NOTES
    later = time.time_ns()
    _prompt(state, "now style the button", later)
    _prebuilt(state, "second notes\n", covers_ns=later)
    reads: list[str] = []
    read_tail = spool_tail.read_tail

    def counted(path: str, budget: int) -> tuple[bytes, int]:
        reads.append(path)
        return read_tail(path, budget)

    monkeypatch.setattr(spool_tail, "read_tail", counted)
    assert _context(session_start_output(_event("compact"), str(state))) == "second notes\n"
    assert len(reads) == len(list((state / "spool").iterdir())) == 1


def test_a_precompact_is_recorded_in_the_sessions_own_folder_and_nowhere_else(
    tmp_path: Path,
) -> None:
    state = _state(tmp_path)
    pre = payload(session_id=SID, hook_event_name="PreCompact", trigger="auto")
    record_compaction(pre, str(state), 1234)
    record = state / "resume" / SID / "compaction.json"
    assert json.loads(record.read_text()) == {"precompact_ns": 1234}
    assert oct(record.stat().st_mode & 0o777) == "0o600"
    for bad in ("../escape", ".hidden", "a/b", 42):
        record_compaction(payload(session_id=bad, hook_event_name="PreCompact"), str(state), 99)
    record_compaction(payload(session_id=OTHER, hook_event_name="Stop"), str(state), 99)
    assert sorted(p.name for p in (state / "resume").iterdir()) == [SID]
    assert not (tmp_path / "escape").exists()
    # A resume folder that is a symlink is never written through.
    outside = tmp_path / "outside"
    outside.mkdir()
    (state / "resume" / OTHER).symlink_to(outside)
    record_compaction(payload(session_id=OTHER, hook_event_name="PreCompact"), str(state), 5)
    assert list(outside.iterdir()) == []


def test_the_output_is_capped_at_max_chars_at_a_line_end(tmp_path: Path) -> None:
    state = _state(tmp_path, NO_BUILD + "max_chars = 1000\n")
    text = "".join(f"line {i:03d} " + "x" * 40 + "\n" for i in range(40))
    _prebuilt(state, text)
    context = _context(session_start_output(_event("compact"), str(state)))
    assert 500 < len(context) <= 1000
    assert text.startswith(context) and text[len(context)] == "\n"


def test_low_confidence_notes_are_handed_back_by_the_hook_but_not_claimed(
    tmp_path: Path,
) -> None:
    state = _state(tmp_path)
    folder = _prebuilt(state, confidence="low")
    assert claim_context(str(folder)) == ""
    assert (folder / "context.md").exists()
    assert _context(session_start_output(_event("compact"), str(state))) == NOTES


# --- stale or missing notes: the spool's tail, or a build ----------------------------------


def test_notes_older_than_the_spool_are_not_handed_back_the_spool_tail_is(
    tmp_path: Path,
) -> None:
    state = _state(tmp_path)
    now = time.time_ns()
    _prompt(state, "rename the invoices column", now)
    folder = _prebuilt(state, covers_ns=now - 1)
    context = _context(session_start_output(_event("compact"), str(state)))
    assert context != NOTES
    assert context.startswith("ctxd notes for session (4a5be60a), recorded at ")
    assert "Most recent user request: rename the invoices column" in context
    assert (folder / "context.md").exists()  # the stale notes stay unconsumed
    record = _log(state)[-1]
    assert record["reason"].endswith(
        "(from the spool's tail: the full notes were not ready)"
    )
    assert record["chars"] == len(context)


def test_nothing_known_and_no_time_to_build_says_so(tmp_path: Path) -> None:
    state = _state(tmp_path)
    assert session_start_output(_event("compact"), str(state)) == ""
    record = _log(state)[-1]
    assert record["injected"] is False
    # The figure is the time left after looking for notes a daemon might be writing.
    assert re.fullmatch(
        "the conversation was just compacted: the notes go back once; nothing could be handed"
        r" back: no recorded history, or the build did not finish within -?[0-9.e-]+ s",
        record["reason"],
    )
    assert "notes_of" not in record


def test_without_notes_the_hook_builds_them_from_the_spool(tmp_path: Path) -> None:
    state = _state(tmp_path, BUILD)
    now = time.time_ns()
    _prompt(state, "migrate the billing tables", now)
    context = _context(session_start_output(_event("compact"), str(state)))
    assert "migrate the billing tables" in context
    assert (state / "index.db").exists()
    record = _log(state)[-1]
    assert record["reason"].endswith("(built now)") and record["notes_of"] == SID
    assert (state / "resume" / SID / "consumed-context.md").read_text() == context


def test_a_daemon_that_never_writes_the_notes_is_waited_for_then_the_tail_is_used(
    tmp_path: Path,
) -> None:
    state = _state(tmp_path, "[resume]\nprebuild = false\nbuild_timeout_s = 0.2\n")
    _prompt(state, "fix the CSV export", time.time_ns())
    with writer_lock(StatePaths(state)):
        context = _context(session_start_output(_event("compact"), str(state)))
    assert "Most recent user request: fix the CSV export" in context
    assert not (state / "index.db").exists()  # no build beside the lock holder


def test_notes_a_daemon_wrote_are_taken_while_it_holds_the_lock(tmp_path: Path) -> None:
    state = _state(tmp_path, BUILD)
    now = time.time_ns()
    _prompt(state, "fix the CSV export", now)
    folder = _prebuilt(state, covers_ns=now)
    with writer_lock(StatePaths(state)):
        assert _context(session_start_output(_event("compact"), str(state))) == NOTES
    assert (folder / "consumed-context.md").exists()


# --- clear: the ended session's notes ------------------------------------------------------


def test_after_clear_the_notes_the_ended_session_left_are_handed_back(tmp_path: Path) -> None:
    state = _state(tmp_path)
    _prebuilt(state, session_id=OTHER, trigger="session_end")
    _latest(state, OTHER, time.time_ns())
    context = _context(session_start_output(_event("clear"), str(state)))
    assert context == NOTES
    record = _log(state)[-1]
    assert record["notes_of"] == OTHER
    assert record["reason"].endswith("(prebuilt when that session ended)")
    assert (state / "resume" / OTHER / "consumed-context.md").exists()


@pytest.mark.parametrize(
    ("age_s", "latest_trigger", "state_trigger", "latest_id"),
    [
        (700, "session_end", "session_end", OTHER),  # older than the handoff window
        (1, "pre_compact", "session_end", OTHER),  # latest.json is not a session end
        (1, "session_end", "pre_compact", OTHER),  # the notes are not the ones it ended with
        (1, "session_end", "session_end", SID),  # latest is this very session
        (1, "session_end", "session_end", "../" + OTHER),  # not a session id
    ],
    ids=["stale", "latest-not-an-end", "notes-not-an-end", "same-session", "bad-id"],
)
def test_after_clear_only_a_fresh_session_end_is_handed_over(
    tmp_path: Path, age_s: int, latest_trigger: str, state_trigger: str, latest_id: str
) -> None:
    state = _state(tmp_path)
    _prebuilt(state, session_id=OTHER, trigger=state_trigger)
    _latest(state, latest_id, time.time_ns() - age_s * 10**9, latest_trigger)
    assert session_start_output(_event("clear"), str(state)) == ""
    assert (state / "resume" / OTHER / "context.md").exists()


def test_after_clear_a_handoff_just_inside_the_window_is_taken(tmp_path: Path) -> None:
    state = _state(tmp_path)
    _prebuilt(state, session_id=OTHER, trigger="session_end")
    _latest(state, OTHER, time.time_ns() - 590 * 10**9)
    assert _context(session_start_output(_event("clear"), str(state))) == NOTES


def test_after_clear_a_session_with_events_of_its_own_does_not_take_another_s(
    tmp_path: Path,
) -> None:
    state = _state(tmp_path)
    _prompt(state, "a new task", time.time_ns())
    _prebuilt(state, session_id=OTHER, trigger="session_end")
    _latest(state, OTHER, time.time_ns())
    assert session_start_output(_event("clear"), str(state)) == ""  # no tail notes after /clear
    assert (state / "resume" / OTHER / "context.md").exists()


# --- startup and resume --------------------------------------------------------------------


def test_startup_hands_back_the_project_memory_capped(tmp_path: Path) -> None:
    state = _state(tmp_path)
    memory = "".join(f"- open task {i:03d}: " + "y" * 30 + "\n" for i in range(200))
    (state / "context" / "startup.md").write_text(memory)
    context = _context(session_start_output(_event(None), str(state)))  # no source: startup
    assert 2000 < len(context) <= 4000 and memory.startswith(context)
    assert _log(state)[-1]["source"] == "startup"
    assert "notes_of" not in _log(state)[-1]  # project memory, no session's notes


def test_startup_with_nothing_open_or_memory_off_hands_back_nothing(tmp_path: Path) -> None:
    state = _state(tmp_path)
    assert session_start_output(_event("startup"), str(state)) == ""
    assert _log(state)[-1]["reason"].endswith("; nothing is open in this project")
    assert "notes_of" not in _log(state)[-1]
    (state / "context" / "startup.md").write_text("- open task\n")
    (state / "config.toml").write_text("[resume]\ninject_on_startup = false\n")
    assert session_start_output(_event("startup"), str(state)) == ""
    assert _log(state)[-1]["reason"] == (
        "a new session starts and [resume] inject_on_startup is off"
    )


def test_startup_never_reads_through_a_symlinked_context_folder(tmp_path: Path) -> None:
    state = _state(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "startup.md").write_text("- planted\n")
    os.rmdir(state / "context")
    os.symlink(elsewhere, state / "context")
    assert session_start_output(_event("startup"), str(state)) == ""


def test_resume_hands_back_only_to_a_compacted_conversation_without_notes(
    tmp_path: Path,
) -> None:
    state = _state(tmp_path)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"type":"user"}\n')
    _prebuilt(state)
    event = _event("resume", transcript_path=str(transcript))
    assert session_start_output(event, str(state)) == ""
    assert "never compacted (transcript)" in _log(state)[-1]["reason"]
    transcript.write_text('{"type":"system","subtype":"compact_boundary"}\n{"type":"user"}\n')
    assert _context(session_start_output(event, str(state))) == NOTES


def test_resume_without_a_transcript_asks_ctxd_s_own_log(tmp_path: Path) -> None:
    state = _state(tmp_path)
    _prebuilt(state)
    assert _context(session_start_output(_event("compact"), str(state))) == NOTES
    # A resume with no readable transcript: the log says it was compacted and notes went in.
    event = _event("resume", transcript_path=str(tmp_path / "gone.jsonl"))
    assert session_start_output(event, str(state)) == ""
    assert _log(state)[-1]["reason"] == (
        "ctxd notes are already in the conversation since its last compaction (ctxd's log)"
    )


def test_a_source_not_in_inject_on_hands_back_nothing(tmp_path: Path) -> None:
    state = _state(tmp_path, NO_BUILD + 'inject_on = ["resume"]\n')
    _prebuilt(state)
    assert session_start_output(_event("compact"), str(state)) == ""
    assert _log(state)[-1]["reason"] == "source 'compact' is not in [resume] inject_on"


# --- preview and the claim -----------------------------------------------------------------


def test_a_preview_reads_the_notes_without_consuming_them(tmp_path: Path) -> None:
    state = _state(tmp_path)
    folder = _prebuilt(state)
    event = json.loads(_event("compact"))
    settings = read_settings(str(state))
    text, why, origin = plan_session_start(str(state), event, settings, consume=False)
    assert (text, origin) == (NOTES, SID)
    assert why.endswith("(prebuilt)")
    assert (folder / "context.md").exists() and not (folder / "consumed-context.md").exists()
    assert take_context(str(folder), consume=False) == NOTES
    assert take_context(str(folder)) == NOTES  # consumed now
    assert not (folder / "context.md").exists()
    assert take_context(str(folder), consume=False) == NOTES  # the consumed copy
    assert take_context(str(folder)) == NOTES  # handed back again: decide() gates, not the file


def test_take_context_refuses_stale_missing_corrupt_and_symlinked_folders(
    tmp_path: Path,
) -> None:
    state = _state(tmp_path)
    folder = _prebuilt(state, covers_ns=100)
    assert take_context(str(folder), newer_than_ns=101) is None
    assert take_context(str(folder), newer_than_ns=100, consume=False) == NOTES
    assert take_context(str(folder), must_be_session_end=True) is None
    assert take_context(str(state / "resume" / OTHER)) is None  # no such folder: build one
    (folder / "precompact_state.json").write_text("[1, 2]")
    assert take_context(str(folder)) is None
    (folder / "precompact_state.json").write_text("{not json")
    assert take_context(str(folder)) is None
    (folder / "precompact_state.json").write_text('{"covers_ns": "100"}')
    assert take_context(str(folder), newer_than_ns=1) is None
    assert take_context(str(folder), consume=False) == NOTES
    link = state / "resume" / OTHER
    os.symlink(folder, link)
    assert take_context(str(link)) == ""


def test_the_claim_consumes_a_context_exactly_once(tmp_path: Path) -> None:
    state = _state(tmp_path)
    folder = _prebuilt(state, trigger="session_end", covers_ns=50)
    assert claim_context(str(folder), newer_than_ns=51) is None
    assert claim_context(str(folder), newer_than_ns=50, must_be_session_end=True) == NOTES
    assert claim_context(str(folder)) == ""  # consumed already
    medium = _prebuilt(state, session_id=OTHER, confidence="medium")
    assert claim_context(str(medium), must_be_session_end=True) == ""
    assert (medium / "context.md").exists()
    assert claim_context(str(medium)) == NOTES


def test_autostart_starts_the_daemon_even_when_nothing_is_handed_back(tmp_path: Path) -> None:
    state = _state(tmp_path, NO_BUILD + "[daemon]\nautostart = true\n")
    before = len(spawn._SPAWNED)
    try:
        assert session_start_output(_event("startup"), str(state)) == ""
        started = spawn._SPAWNED[before:]
        assert [p.args[-2:] for p in started] == [["--state-dir", str(state)]]
        assert (state / "autostart.lock").exists()
    finally:
        for proc in spawn._SPAWNED[before:]:
            proc.terminate()
            proc.wait(timeout=60)


def test_the_claim_never_takes_a_folder_lock_that_is_a_symlink(tmp_path: Path) -> None:
    state = _state(tmp_path)
    folder = _prebuilt(state)
    os.symlink(tmp_path / "elsewhere.lock", folder / "state.lock")
    assert claim_context(str(folder)) == ""
    assert (folder / "context.md").exists()
    assert not (tmp_path / "elsewhere.lock").exists()


def test_a_compaction_after_a_resume_that_handed_notes_back_hands_them_back_too(
    tmp_path: Path,
) -> None:
    state = _state(tmp_path)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"type":"system","subtype":"compact_boundary"}\n')
    _prebuilt(state)
    resumed = _event("resume", transcript_path=str(transcript))
    assert _context(session_start_output(resumed, str(state))) == NOTES
    # No event since, but the last hand-back was a resume's, not this compaction's.
    assert _context(session_start_output(_event("compact"), str(state))) == NOTES


def _frames(thread: threading.Thread) -> list[str]:
    frame = sys._current_frames().get(thread.ident or 0)
    names = []
    while frame is not None:
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    return names


def test_notes_a_daemon_writes_while_the_hook_waits_are_taken(tmp_path: Path) -> None:
    state = _state(tmp_path, "[resume]\nprebuild = false\nbuild_timeout_s = 20.0\n")
    now = time.time_ns()
    _prompt(state, "fix the CSV export", now)
    folder = _prebuilt(state, "older notes\n", covers_ns=now - 1)  # stale: the daemon is at it
    out: list[str] = []
    with writer_lock(StatePaths(state)):
        hook = threading.Thread(
            target=lambda: out.append(session_start_output(_event("compact"), str(state))),
            daemon=True,
        )
        hook.start()
        # Write the fresh notes once the hook is waiting for them (or has given up).
        for _ in range(20_000):
            # By a part of the name: mutmut runs it as x__wait_for_prebuilt__mutmut_….
            if not hook.is_alive() or any("_wait_for_prebuilt" in f for f in _frames(hook)):
                break
            time.sleep(0.001)
        lock = lock_folder(str(folder))  # as the writer does: the hook reads a whole pair
        try:
            _prebuilt(state, covers_ns=now)
        finally:
            os.close(lock)
        hook.join(timeout=60)
    assert len(out) == 1 and _context(out[0]) == NOTES
    assert _log(state)[-1]["reason"].endswith("(prebuilt, waited for the builder)")
    assert not (folder / "context.md").exists()  # consumed
    assert not (state / "index.db").exists()  # no build beside the daemon


def test_after_clear_without_prebuilt_notes_the_ended_session_is_built(tmp_path: Path) -> None:
    state = _state(tmp_path, BUILD)
    now = time.time_ns()
    _prompt(state, "add the login page", now - 10**9, session_id=OTHER)
    _spool(state, now, OTHER, hook_event_name="SessionEnd", reason="clear")
    context = _context(session_start_output(_event("clear"), str(state)))
    assert "add the login page" in context
    record = _log(state)[-1]
    assert record["notes_of"] == OTHER and record["reason"].endswith("(built now)")


def test_a_build_that_fails_falls_back_to_the_spool_tail(tmp_path: Path) -> None:
    state = _state(tmp_path, BUILD)
    _prompt(state, "fix the CSV export", time.time_ns())
    (state / "index.db").write_bytes(b"this is not an SQLite database" * 100)
    context = _context(session_start_output(_event("compact"), str(state)))
    assert "Most recent user request: fix the CSV export" in context


def test_notes_that_are_only_whitespace_are_not_handed_back(tmp_path: Path) -> None:
    state = _state(tmp_path)
    _prebuilt(state, "\n  \n")
    event = _event("compact", transcript_path=5)  # not a path: not logged
    assert session_start_output(event, str(state)) == ""
    record = _log(state)[-1]
    assert (record["injected"], record["chars"]) == (False, 0)
    assert "transcript" not in record


def test_resume_with_no_transcript_and_no_log_hands_back_nothing(tmp_path: Path) -> None:
    state = _state(tmp_path)
    _prebuilt(state)
    (state / "resume" / SID / "starts.jsonl").unlink(missing_ok=True)
    event = _event("resume", transcript_path=str(tmp_path / "gone.jsonl"))
    assert session_start_output(event, str(state)) == ""
    assert _log(state)[-1]["reason"] == (
        "the conversation's transcript cannot be read and ctxd has no log of it"
    )


def test_after_clear_stale_notes_of_the_ended_session_are_not_handed_over(
    tmp_path: Path,
) -> None:
    state = _state(tmp_path)
    now = time.time_ns()
    _prompt(state, "one more thing", now, session_id=OTHER)  # after its notes were written
    _prebuilt(state, session_id=OTHER, trigger="session_end", covers_ns=now - 1)
    _latest(state, OTHER, time.time_ns())
    assert session_start_output(_event("clear"), str(state)) == ""
    assert (state / "resume" / OTHER / "context.md").exists()


def test_a_preview_of_a_clear_or_a_build_consumes_nothing(tmp_path: Path) -> None:
    state = _state(tmp_path, BUILD)
    _prebuilt(state, session_id=OTHER, trigger="session_end")
    _latest(state, OTHER, time.time_ns())
    settings = read_settings(str(state))
    event = json.loads(_event("clear"))
    text, why, origin = plan_session_start(str(state), event, settings, consume=False)
    assert (text, origin) == (NOTES, OTHER)
    assert (state / "resume" / OTHER / "context.md").exists()
    _prompt(state, "migrate the billing tables", time.time_ns())
    event = json.loads(_event("compact"))
    text, why, origin = plan_session_start(str(state), event, settings, consume=False)
    assert "migrate the billing tables" in text and why.endswith("(built now)")
    assert (state / "resume" / SID / "context.md").exists()


def test_a_preview_s_own_build_timeout_overrides_the_config(tmp_path: Path) -> None:
    state = _state(tmp_path, BUILD)
    _prompt(state, "migrate the billing tables", time.time_ns())
    settings = read_settings(str(state))
    event = json.loads(_event("compact"))
    text, why, _ = plan_session_start(
        str(state), event, settings, consume=False, build_timeout_s=0.05
    )
    assert "migrate the billing tables" in text
    assert why.endswith("(from the spool's tail: the full notes were not ready)")
    assert not (state / "index.db").exists()  # too little time to build at all
