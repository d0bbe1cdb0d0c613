"""The hand-back on the real client's event order: the compaction is not an agent, ids as users
see them, one current copy of the notes, never silent (real hook, real CLI, real index)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import hook_env, poll, query, run_cli, run_hook
from resume_story import Daemons

SID = "4a5be60a-1b2d-4c3e-9f40-5a6b7c8d9e01"
COMPACT_TEXT = (
    "<analysis>\nLet me chronologically analyze the conversation.\n</analysis>\n\n"
    "<summary>\n1. Primary Request and Intent:\n   Fix the CSV export.\n</summary>"
)


def event(project: Path, name: str, session_id: str = SID, **extra: Any) -> bytes:
    """A payload as Claude Code 2.1.330 sends it (compact JSON, common fields first)."""
    base: dict[str, Any] = {
        "session_id": session_id,
        "transcript_path": str(project / f"{session_id}.jsonl"),
        "cwd": str(project),
        "permission_mode": "bypassPermissions",
        "hook_event_name": name,
    }
    base.update(extra)
    return json.dumps(base, separators=(",", ":")).encode()


def feed(state: Path, project: Path, payloads: list[bytes]) -> list[str]:
    """Run the real hook for each payload; return what it printed.

    A state directory made here has the PreCompact builder off, so that SessionStart's own
    build path is what runs (test_compaction_takes_the_prebuilt_path covers the builder).
    """
    if not state.exists():
        state.mkdir(mode=0o700)
        (state / "config.toml").write_text("[resume]\nprebuild = false\n")
    env = hook_env(state)
    out = []
    for p in payloads:
        done = run_hook(p, env, cwd=project)
        assert done.returncode == 0, done.stderr
        out.append(done.stdout.decode())
    return out


def agent_call(project: Path, tool_use_id: str, prompt: str, *, cc_id: str = "") -> list[bytes]:
    """PreToolUse of the Agent tool, then SubagentStart (Claude Code's id, no tool_use_id)."""
    tool_input = {
        "description": "look around",
        "prompt": prompt,
        "subagent_type": "general-purpose",
    }
    calls = [
        event(
            project, "PreToolUse", tool_name="Agent", tool_input=tool_input, tool_use_id=tool_use_id
        ),
    ]
    if cc_id:
        calls.append(event(project, "SubagentStart", agent_id=cc_id, agent_type="general-purpose"))
    return calls


def test_compaction_stop_is_the_session_summary_not_an_agent(tmp_path: Path) -> None:
    state, project = tmp_path / "state", tmp_path / "proj"
    project.mkdir()
    feed(
        state,
        project,
        [
            event(project, "UserPromptSubmit", prompt="fix the csv export"),
            # A background agent is still running when the conversation is compacted.
            *agent_call(project, "toolu_bg", "AgentId: scout-1\nlook at the export", cc_id="a11aa"),
            event(project, "PreCompact", trigger="auto", custom_instructions=""),
            event(
                project,
                "SubagentStop",
                agent_id="a9f45c753bf19d6f2",
                agent_type="",
                stop_hook_active=False,
                last_assistant_message=COMPACT_TEXT,
            ),
            event(project, "PostCompact", trigger="auto", compact_summary=COMPACT_TEXT),
        ],
    )
    done = run_cli("ingest", state_dir=state)
    assert done.returncode == 0, done.stderr
    agents = query(state, "SELECT agent_id, status FROM agents WHERE session_id=?", (SID,))
    assert agents == [("scout-1", "running")]
    rows = query(state, "SELECT agent_id, event FROM entries WHERE hook_event='SubagentStop'")
    assert rows == [("main", "compact_summary")]
    assert not (state / "sessions" / SID / "a9f45c753bf19d6f2.jsonl").exists()


def _two_agents(tmp_path: Path) -> tuple[Path, Path]:
    """A session with an `AgentId:` agent and one named by ctxd's fallback, both finished."""
    state, project = tmp_path / "state", tmp_path / "proj"
    project.mkdir()
    done_named = {
        "status": "completed",
        "agentId": "a11aa",
        "content": [{"type": "text", "text": "ok"}],
    }
    done_anon = {
        "status": "completed",
        "agentId": "a22bb",
        "content": [{"type": "text", "text": "ok"}],
    }
    feed(
        state,
        project,
        [
            event(project, "UserPromptSubmit", prompt="look around"),
            *agent_call(project, "toolu_1", "AgentId: scout-1\nlook at the export", cc_id="a11aa"),
            event(
                project,
                "PreToolUse",
                tool_name="Read",
                tool_input={"file_path": "/x/a.py"},
                tool_use_id="toolu_r1",
                agent_id="a11aa",
                agent_type="general-purpose",
            ),
            event(
                project,
                "PostToolUse",
                tool_name="Agent",
                tool_use_id="toolu_1",
                tool_input={"prompt": "AgentId: scout-1\nlook", "subagent_type": "general-purpose"},
                tool_response=done_named,
            ),
            *agent_call(project, "toolu_2", "list the tests", cc_id="a22bb"),
            event(
                project,
                "PreToolUse",
                tool_name="Glob",
                tool_input={"pattern": "tests/*.py"},
                tool_use_id="toolu_g1",
                agent_id="a22bb",
                agent_type="general-purpose",
            ),
            event(
                project,
                "PostToolUse",
                tool_name="Agent",
                tool_use_id="toolu_2",
                tool_input={"prompt": "list the tests", "subagent_type": "general-purpose"},
                tool_response=done_anon,
            ),
        ],
    )
    assert run_cli("ingest", state_dir=state).returncode == 0
    return state, project


def read_entries(state: Path, *args: str) -> list[dict[str, Any]]:
    done = run_cli("read", *args, state_dir=state)
    assert done.returncode == 0, done.stderr
    entries: list[dict[str, Any]] = json.loads(done.stdout)["entries"]
    return entries


def test_read_accepts_every_id_an_agent_is_known_by(tmp_path: Path) -> None:
    state, _ = _two_agents(tmp_path)
    (generated,) = [
        r[0] for r in query(state, "SELECT agent_id FROM agents WHERE cc_agent_id='a22bb'")
    ]
    assert generated.startswith("general-purpose-")
    by_generated = read_entries(state, "--agent-id", generated)
    assert by_generated and {e["agent_id"] for e in by_generated} == {generated}
    assert read_entries(state, "--agent-id", "a22bb") == by_generated
    assert read_entries(state, "--agent-id", "a22bb", "--session", SID) == by_generated
    by_name = read_entries(state, "--agent-id", "scout-1")
    assert by_name and read_entries(state, "--agent-id", "a11aa") == by_name


def test_read_session_accepts_the_prefix_and_stamp_sessions_prints(tmp_path: Path) -> None:
    state, _ = _two_agents(tmp_path)
    full = read_entries(state, "--agent-id", "main", "--session", SID)
    assert full
    assert read_entries(state, "--agent-id", "main", "--session", SID[:8]) == full
    (stamp,) = [
        line.split()[0]
        for line in run_cli("sessions", state_dir=state).stdout.splitlines()
        if SID[:8] in line
    ]
    assert read_entries(state, "--agent-id", "main", "--session", stamp) == full


def test_read_unknown_or_ambiguous_session_is_a_one_line_error(tmp_path: Path) -> None:
    state, project = _two_agents(tmp_path)
    other = "4a5be60b-0000-4000-8000-000000000000"
    feed(state, project, [event(project, "UserPromptSubmit", session_id=other, prompt="hi")])
    for ref, words in (("4a5be6", "matches 2 sessions"), ("ffff", "no session matches")):
        done = run_cli("read", "--agent-id", "main", "--session", ref, state_dir=state)
        assert done.returncode != 0
        assert done.stdout == "" and len(done.stderr.splitlines()) == 1
        assert words in done.stderr


# --- one current copy, never silent ------------------------------------------------------


def transcript(path: Path, *lines: dict[str, Any]) -> Path:
    """A Claude Code transcript with the records that matter here (compact JSON lines)."""
    path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    return path


BOUNDARY = {"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted"}


def notes_attachment(text: str) -> dict[str, Any]:
    return {
        "type": "attachment",
        "attachment": {
            "type": "hook_additional_context",
            "content": [text],
            "hookName": "SessionStart",
        },
    }


def context_of(stdout: str) -> str:
    return str(json.loads(stdout)["hookSpecificOutput"]["additionalContext"]) if stdout else ""


def work(project: Path) -> list[bytes]:
    return [
        event(project, "SessionStart", source="startup"),
        event(project, "UserPromptSubmit", prompt="fix the csv export in src/export.py"),
        event(
            project,
            "PreToolUse",
            tool_name="Edit",
            tool_use_id="toolu_e1",
            tool_input={
                "file_path": str(project / "src/export.py"),
                "old_string": "a",
                "new_string": "b",
            },
        ),
        event(
            project,
            "PostToolUse",
            tool_name="Edit",
            tool_use_id="toolu_e1",
            tool_input={"file_path": str(project / "src/export.py")},
            tool_response={},
        ),
        event(project, "Stop", stop_hook_active=False, last_assistant_message="Edited."),
        event(project, "SessionEnd", reason="other"),
    ]


def test_notes_arrive_once_across_compact_and_resumes(tmp_path: Path) -> None:
    """`claude -p …`, `claude -p /compact --resume S`, `claude -p … --resume S` (twice):
    the notes go in at the compaction only; the transcript shows them in the live context."""
    state, project = tmp_path / "state", tmp_path / "proj"
    project.mkdir()
    path = project / f"{SID}.jsonl"
    transcript(path, {"type": "user", "message": {"role": "user", "content": "fix it"}})
    feed(state, project, work(project))
    outs = feed(state, project, [event(project, "SessionStart", source="resume")])
    outs += feed(
        state,
        project,
        [
            event(project, "PreCompact", trigger="manual", custom_instructions=""),
            event(
                project,
                "SubagentStop",
                agent_id="a0c0ffee",
                agent_type="",
                last_assistant_message=COMPACT_TEXT,
            ),
            event(project, "SessionStart", source="compact"),
        ],
    )
    handed = context_of(outs[-1])
    assert handed.startswith("ctxd notes for session")
    transcript(path, {"type": "user"}, BOUNDARY, notes_attachment(handed))
    outs += feed(
        state,
        project,
        [
            event(project, "PostCompact", trigger="manual", compact_summary=COMPACT_TEXT),
            event(project, "SessionEnd", reason="other"),
            event(project, "SessionStart", source="resume"),
            event(project, "UserPromptSubmit", prompt="and now the tests"),
            event(project, "SessionEnd", reason="other"),
            event(project, "SessionStart", source="resume"),
        ],
    )
    injected = [context_of(o) for o in outs if o]
    assert injected == [handed]
    log = [
        json.loads(x) for x in (state / "resume" / SID / "starts.jsonl").read_text().splitlines()
    ]
    assert [(r["source"], r["injected"]) for r in log] == [
        ("startup", False),
        ("resume", False),
        ("compact", True),
        ("resume", False),
        ("resume", False),
    ]
    assert all(r["reason"] for r in log)
    assert "never compacted" in log[1]["reason"]
    assert "already in the conversation" in log[3]["reason"]


OTHER = "7d8e9f00-aaaa-4bbb-8ccc-ddddeeeeffff"


def compaction(project: Path, session_id: str = SID) -> list[bytes]:
    """What Claude Code fires for one compaction, up to the compaction's own SubagentStop."""
    return [
        event(project, "PreCompact", session_id, trigger="auto", custom_instructions=""),
        event(
            project,
            "SubagentStop",
            session_id,
            agent_id="a0c0ffee",
            agent_type="",
            last_assistant_message=COMPACT_TEXT,
        ),
    ]


def busy_neighbour(project: Path, mib: float) -> list[bytes]:
    """Another session of the project writing `mib` MiB to the spool (large tool outputs)."""
    chunk = "x" * 200_000
    return [
        event(
            project,
            "PostToolUse",
            OTHER,
            tool_name="Bash",
            tool_use_id=f"toolu_busy_{n}",
            tool_input={"command": "cat big.log"},
            tool_response={"stdout": chunk, "stderr": "", "interrupted": False},
        )
        for n in range(int(mib * (1 << 20)) // len(chunk) + 1)
    ]


def test_a_second_compaction_hands_back_however_much_others_write_meanwhile(
    tmp_path: Path,
) -> None:
    """More than the spool tail the hook reads (1 MiB) is written by another session between
    this session's PreCompact and its SessionStart(compact): the notes still go back, and
    they are this compaction's; the same SessionStart again still hands back nothing."""
    state, project = tmp_path / "state", tmp_path / "proj"
    project.mkdir()
    feed(state, project, work(project))
    outs = feed(
        state, project, [*compaction(project), event(project, "SessionStart", source="compact")]
    )
    assert context_of(outs[-1]).startswith("ctxd notes for session")
    feed(
        state,
        project,
        [
            event(project, "UserPromptSubmit", prompt="now write the tests for the CSV export"),
            *compaction(project),
            *busy_neighbour(project, 1.5),
        ],
    )
    (out,) = feed(state, project, [event(project, "SessionStart", source="compact")])
    handed = context_of(out)
    assert "now write the tests for the CSV export" in handed
    log = [
        json.loads(x) for x in (state / "resume" / SID / "starts.jsonl").read_text().splitlines()
    ]
    assert [(r["source"], r["injected"]) for r in log[-2:]] == [("compact", True)] * 2
    # The same compaction's SessionStart once more (a hook installed twice, say): not again.
    (again,) = feed(state, project, [event(project, "SessionStart", source="compact")])
    assert again == ""
    last = json.loads((state / "resume" / SID / "starts.jsonl").read_text().splitlines()[-1])
    assert last["reason"] == "this compaction's notes were handed back already (no event since)"


def test_resume_after_a_compaction_without_notes_hands_back(tmp_path: Path) -> None:
    state, project = tmp_path / "state", tmp_path / "proj"
    project.mkdir()
    transcript(project / f"{SID}.jsonl", {"type": "user"}, BOUNDARY, {"type": "user"})
    feed(state, project, work(project))
    (out,) = feed(state, project, [event(project, "SessionStart", source="resume")])
    assert "fix the csv export" in context_of(out)


def test_low_confidence_compaction_is_never_silent_and_preview_matches(tmp_path: Path) -> None:
    """Edits only announced (PreToolUse) before PreCompact: confidence is low, the notes still
    carry the last request and the files; `resume --preview` prints exactly what the hook
    then hands back."""
    state, project = tmp_path / "state", tmp_path / "proj"
    project.mkdir()
    edits = [
        event(
            project,
            "PreToolUse",
            tool_name="Edit",
            tool_use_id=f"toolu_p{n}",
            tool_input={"file_path": str(project / f"f{n}.py")},
        )
        for n in range(5)
    ]
    feed(
        state,
        project,
        [
            event(project, "UserPromptSubmit", prompt="rename the exporter module"),
            *edits,
            event(project, "PreCompact", trigger="auto", custom_instructions=""),
        ],
    )
    preview = run_cli("resume", SID[:8], "--preview", "--source", "compact", state_dir=state)
    assert preview.returncode == 0, preview.stderr
    assert "would hand back" in preview.stderr and "compacted" in preview.stderr
    (out,) = feed(state, project, [event(project, "SessionStart", source="compact")])
    handed = context_of(out)
    assert "rename the exporter module" in handed and "\n- f4.py (" in handed
    assert preview.stdout == handed + ("" if handed.endswith("\n") else "\n")
    state_doc = json.loads((state / "resume" / SID / "precompact_state.json").read_text())
    assert state_doc["confidence"] == "low"
    again = run_cli("resume", SID[:8], "--preview", "--source", "compact", state_dir=state)
    assert again.stdout == "" and "handed back already" in again.stderr


def test_resume_package_is_the_sessions_own(tmp_path: Path) -> None:
    state, project = tmp_path / "state", tmp_path / "proj"
    project.mkdir()
    other = "3651203b-0000-4000-8000-000000000000"
    feed(
        state,
        project,
        [
            event(project, "UserPromptSubmit", session_id=other, prompt="work on billing"),
            event(project, "UserPromptSubmit", prompt="look at the exporter"),
        ],
    )
    assert run_cli("ingest", state_dir=state).returncode == 0
    (state / "context").mkdir(exist_ok=True)
    (state / "context" / "running-summary.json").write_text(
        json.dumps({"summary": "Session 3651203b: 29 events, billing module rewritten."})
    )
    done = run_cli("resume", SID[:4], state_dir=state)
    assert done.returncode == 0, done.stderr
    assert "3651203b" not in done.stdout and "billing" not in done.stdout


def test_low_confidence_compaction_is_not_silent(tmp_path: Path) -> None:
    state, project = tmp_path / "state", tmp_path / "proj"
    project.mkdir()
    feed(
        state,
        project,
        [
            event(project, "UserPromptSubmit", prompt="rename the exporter module"),
            *[
                event(
                    project,
                    "PreToolUse",
                    tool_name="Edit",
                    tool_use_id=f"toolu_p{n}",
                    tool_input={"file_path": str(project / f"f{n}.py")},
                )
                for n in range(5)
            ],
            event(project, "PreCompact", trigger="auto", custom_instructions=""),
        ],
    )
    (out,) = feed(state, project, [event(project, "SessionStart", source="compact")])
    assert "rename the exporter module" in context_of(out)


# --- text worth its tokens ---------------------------------------------------------------

ANSI_ERROR = (
    'Exit code 1\n\x1b[31m✘ \x1b[41;31m[ERROR]\x1b[0m Could not resolve "./gone"\ufffd\ufffd'
)


def test_notes_text_is_clean_and_says_each_fact_once(tmp_path: Path) -> None:
    state, project = tmp_path / "state", tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "src" / "kept.py").write_text("x\n")
    gone = str(project / "src" / "deleted.py")  # edited, then deleted: stays in the list
    kept = str(project / "src" / "kept.py")
    build = {"command": "npm run build", "description": "Build"}
    feed(
        state,
        project,
        [
            event(project, "UserPromptSubmit", prompt="continue"),
            event(project, "UserPromptSubmit", prompt="make the build pass again"),
            event(
                project,
                "PreToolUse",
                tool_name="ToolSearch",
                tool_use_id="toolu_ts",
                tool_input={"query": "select:TaskCreate"},
            ),
            event(
                project,
                "PostToolUse",
                tool_name="ToolSearch",
                tool_use_id="toolu_ts",
                tool_input={"query": "select:TaskCreate"},
                tool_response={},
            ),
            event(
                project,
                "PostToolUse",
                tool_name="Edit",
                tool_use_id="toolu_ed",
                tool_input={"file_path": gone},
                tool_response={},
            ),
            event(
                project,
                "PostToolUse",
                tool_name="Read",
                tool_use_id="toolu_rd",
                tool_input={"file_path": kept},
                tool_response={},
            ),
            event(
                project,
                "PostToolUseFailure",
                tool_name="Bash",
                tool_use_id="toolu_b1",
                tool_input=build,
                error=ANSI_ERROR,
                is_interrupt=False,
            ),
            event(
                project,
                "PostToolUseFailure",
                tool_name="Bash",
                tool_use_id="toolu_b2",
                tool_input={"command": "npm test"},
                error="Sibling tool call errored",
                is_interrupt=False,
            ),
            event(
                project,
                "PostToolUseFailure",
                tool_name="Bash",
                tool_use_id="toolu_b3",
                tool_input={"command": "sleep 100"},
                error="Interrupted by user",
                is_interrupt=True,
            ),
            event(project, "PreCompact", trigger="auto", custom_instructions=""),
            event(
                project,
                "SubagentStop",
                agent_id="a0c0ffee",
                agent_type="",
                last_assistant_message=COMPACT_TEXT,
            ),
        ],
    )
    (out,) = feed(state, project, [event(project, "SessionStart", source="compact")])
    text = context_of(out)
    assert not [c for c in text if (ord(c) < 32 and c not in "\n\t") or c == "\ufffd"]
    assert "[31m" not in text and "[41;31m" not in text
    assert '"make the build pass again"' in text.splitlines()[0]  # a title, not "continue"
    assert "started again" not in text.splitlines()[0]
    # Claude Code's own summary is in the conversation already: the notes do not repeat it.
    assert "<analysis>" not in text and "<summary>" not in text
    assert "Fix the CSV export." not in text
    assert f"Files worked on lately (paths under {project}):" in text
    assert "- src/deleted.py (edited, not on disk now)" in text
    assert "- src/kept.py (read)" in text
    assert gone not in text and kept not in text
    failure_lines = [ln for ln in text.splitlines() if "npm" in ln and ln.startswith("- Bash")]
    # One line: the tool once, the error once (quoted as printed), the cascade folded into it.
    assert failure_lines == [
        "- Bash `npm run build` failed (exit 1) and printed: \"✘ [ERROR] Could not resolve"
        " './gone'\" (1 parallel call cancelled with it)"
    ]
    assert "Sibling tool call errored" not in text and "Interrupted by user" not in text
    assert "ToolSearch" not in text
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    assert len(lines) == len(set(lines))


# --- fast on the real client: PreCompact starts the build ---------------------------------


def _state_trigger(state: Path) -> str:
    try:
        doc = json.loads((state / "resume" / SID / "precompact_state.json").read_bytes())
    except (OSError, ValueError):
        return ""
    return str(doc.get("trigger", ""))


@pytest.mark.parametrize("with_daemon", [False, True])
def test_compaction_takes_the_prebuilt_path(tmp_path: Path, with_daemon: bool) -> None:
    """PreCompact starts the build (daemon, or a detached builder); the compaction's own
    SubagentStop and PostCompact do not make it stale; SessionStart(compact) uses it."""
    state, project = tmp_path / "state", tmp_path / "proj"
    project.mkdir()
    daemons = Daemons()
    state.mkdir(mode=0o700)  # the default config: the builder is on
    try:
        if with_daemon:
            daemons.start(state)
        feed(
            state,
            project,
            [
                *work(project)[1:5],
                event(project, "PreCompact", trigger="auto", custom_instructions=""),
            ],
        )
        poll(lambda: _state_trigger(state) == "pre_compact", 30)  # while the model compacts
        feed(
            state,
            project,
            [
                event(
                    project,
                    "SubagentStop",
                    agent_id="a0c0ffee",
                    agent_type="",
                    last_assistant_message=COMPACT_TEXT,
                ),
                event(project, "PostCompact", trigger="auto", compact_summary=COMPACT_TEXT),
            ],
        )
        (out,) = feed(state, project, [event(project, "SessionStart", source="compact")])
    finally:
        daemons.stop_all()
    assert "fix the csv export" in context_of(out)
    # The hook did not rebuild the notes (that would make the state's trigger session_start).
    assert _state_trigger(state) != "session_start"
    log = json.loads((state / "resume" / SID / "starts.jsonl").read_text().splitlines()[-1])
    assert "(prebuilt" in log["reason"], log


def test_demo_numbers_agree() -> None:
    """The demo's summary says "compacted" only with a count, and its failure figures match."""
    out = run_cli("demo", timeout=300)
    assert out.returncode == 0, out.stderr
    session = next(ln for ln in out.stdout.splitlines() if ln.startswith("Session "))
    assert "0 compactions" not in session and "compactions, compacted" not in session
    failed = int(re.search(r"(\d+) failed tool calls", session).group(1))  # type: ignore[union-attr]
    remembered = re.search(
        r"Distinct failures remembered: \d+ \(from (\d+) failed calls\)", out.stdout
    )
    assert remembered and int(remembered.group(1)) == failed
