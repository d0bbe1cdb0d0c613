"""The real Claude Code CLI (2.1.330) against a scripted Messages API stand-in, with ctxd's hooks.

A realistic session: prompts, tasks, an edit, a failing then passing command, a subagent named
by `AgentId:` and a background one without, an auto-compaction, a manual `/compact` with
`--resume`, and two more `--resume`s. The request bodies the stand-in receives show where
ctxd's notes arrive (exactly once after each compaction, never otherwise); ctxd's index shows
where every event and agent went. Runs with and without the daemon.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from claude_standin import COMPACT_ASK, Plan, Standin, serve, text, tool
from helpers import REPO, clean_env, poll, query, run_cli
from resume_story import Daemons

VERSION = "2.1.330"
CACHE = Path(os.environ.get("CTXD_TEST_CACHE", Path.home() / ".cache" / "ctxd-test"))
CLI_DIR = CACHE / f"claude-code-{VERSION}"
CLAUDE = CLI_DIR / "node_modules" / ".bin" / "claude"
NOTES = "ctxd notes for session"
# Each copy of the notes, by its first line (which names the session and when it was recorded).
_COPY = re.compile(r"ctxd notes for session [^\n]*")


def _claude() -> Path:
    """The pinned CLI (installed by .ci/run; installed here if missing); skip if npm is down."""
    if not CLAUDE.exists() and shutil.which("npm"):
        CLI_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(CLI_DIR),
                "--no-audit",
                "--no-fund",
                f"@anthropic-ai/claude-code@{VERSION}",
            ],
            capture_output=True,
            timeout=600,
            check=False,
        )
    if not CLAUDE.exists():
        pytest.skip(f"npm could not install @anthropic-ai/claude-code@{VERSION} (unreachable?)")
    return CLAUDE


def client_env(home: Path) -> dict[str, str]:
    """The environment of the CLI and of ctxd's commands: HOME in the test, no API, Claude Code
    or ctxd setting of the machine running the tests, this checkout importable."""
    env = {
        k: v for k, v in clean_env().items() if not k.startswith(("ANTHROPIC_", "CLAUDE", "CTXD"))
    }
    env.update(HOME=str(home), PYTHONPATH=str(REPO))
    return env


def standin_env(base: dict[str, str], port: int, **extra: str) -> dict[str, str]:
    """`base` with the CLI pointed at the stand-in API on `port` and no other traffic."""
    return dict(
        base,
        ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}",
        ANTHROPIC_API_KEY="test-key",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        IS_SANDBOX="1",
        **extra,
    )


def run_sessions(
    env: dict[str, str], replies: dict[str, str], runs: list[tuple[Path, str]]
) -> list[str]:
    """One session of the CLI per (directory, prompt ending in `[[plan:<name>]]`), each answered
    with the text `replies[name]` by a stand-in API; their session ids."""
    standin = Standin({name: Plan([[text(reply)]]) for name, reply in replies.items()})
    server, port = serve(standin)
    try:
        return [_run(_claude(), cwd, standin_env(env, port), prompt) for cwd, prompt in runs]
    finally:
        server.shutdown()
        server.server_close()


def _plans(project: Path) -> dict[str, Plan]:
    app = str(project / "app.py")
    work = [
        [tool("ToolSearch", query="select:TaskCreate,TaskUpdate", max_results=5)],
        [
            tool(
                "TaskCreate",
                subject="Fix the CSV export",
                description="export breaks on é",
                activeForm="Fixing the CSV export",
            )
        ],
        [
            tool(
                "TaskCreate",
                subject="Document the export",
                description="README section",
                activeForm="Documenting the export",
            )
        ],
        [tool("TaskUpdate", taskId="1", status="in_progress")],
        [tool("Edit", file_path=app, old_string="hi", new_string="hello")],
        [tool("Bash", command="python3 -c 'import sys; sys.exit(3)'", description="run checks")],
        [tool("Bash", command="python3 -c 'print(1)'", description="run checks again")],
        [
            tool(
                "Agent",
                description="scout the code",
                subagent_type="general-purpose",
                prompt="AgentId: scout-1\n[[plan:scout]] Look at app.py.",
            )
        ],
        [
            tool(
                "Agent",
                description="list files",
                subagent_type="general-purpose",
                run_in_background=True,
                prompt="[[plan:bg]] List the python files.",
            )
        ],
        [tool("TaskUpdate", taskId="1", status="completed")],
        [text("The export is fixed; the docs task is still open.")],
    ]
    return {
        # The TaskUpdate turn reports a nearly full window: Claude Code compacts before the
        # next request (the auto-compaction).
        "work": Plan(work, usage={9: 990_000}),
        "scout": Plan([[tool("Read", file_path=app)], [text("app.py prints a greeting.")]]),
        # 2.1.330 has no Glob tool: the background agent lists files with Bash.
        "bg": Plan(
            [[tool("Bash", command="ls", description="list files")], [text("One file: app.py.")]]
        ),
        "more": Plan([[tool("Read", file_path=app)], [text("Still fine.")]]),
    }


def _run(claude: Path, project: Path, env: dict[str, str], prompt: str, *extra: str) -> str:
    done = subprocess.run(
        [
            str(claude),
            "-p",
            prompt,
            "--output-format",
            "stream-json",
            "--verbose",
            "--dangerously-skip-permissions",
            "--debug-file",
            str(project.parent / "debug.log"),
            *extra,
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    results = [json.loads(ln) for ln in done.stdout.splitlines() if '"type":"result"' in ln]
    assert results, (done.returncode, done.stderr[-2000:], done.stdout[-2000:])
    return str(results[-1]["session_id"])


def _is_compaction(body: dict[str, Any]) -> bool:
    return COMPACT_ASK in json.dumps(body["messages"][-1:])


def _is_main(body: dict[str, Any]) -> bool:
    first = json.dumps(body["messages"][:1])
    return "[[plan:scout]]" not in first and "[[plan:bg]]" not in first


def _copies(body: dict[str, Any]) -> list[str]:
    """The ctxd notes in one request, by their first lines."""
    return _COPY.findall(json.dumps(body["messages"], ensure_ascii=False).replace("\\n", "\n"))


def _notes_texts(body: dict[str, Any]) -> list[str]:
    """The ctxd notes in one request, whole: from their first line to the end of their message
    (two compactions within one second have the same first line)."""
    texts: list[str] = []
    for message in body["messages"]:
        content = message.get("content")
        blocks = [content] if isinstance(content, str) else content or []
        for block in blocks:
            text = block if isinstance(block, str) else block.get("text", "")
            for part in text.split("ctxd notes for session ")[1:]:
                texts.append(part)
    return texts


@pytest.mark.parametrize("with_daemon", [False, True], ids=["no-daemon", "daemon"])
def test_real_client_session(tmp_path: Path, with_daemon: bool) -> None:
    claude = _claude()
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    (project / ".git").mkdir()
    (project / "app.py").write_text("print('hi')\n")
    base_env = client_env(home)
    init = run_cli("init", cwd=project, env=base_env)
    assert init.returncode == 0, init.stderr
    standin = Standin(_plans(project))
    server, port = serve(standin)
    env = standin_env(base_env, port, CLAUDE_CODE_ENABLE_TODO_TOOLS="true")
    daemons = Daemons()
    marks: dict[str, int] = {}
    started = time.monotonic()
    try:
        if with_daemon:
            daemons.start(project / ".ctxd")
        sid = _run(claude, project, env, "Fix the CSV export please [[plan:work]]")
        marks["run1"] = len(standin.requests)
        assert _run(claude, project, env, "/compact", "--resume", sid) == sid
        marks["compact"] = len(standin.requests)
        _run(claude, project, env, "Check app.py again [[plan:more]]", "--resume", sid)
        marks["resume1"] = len(standin.requests)
        _run(claude, project, env, "Anything else?", "--resume", sid)
        marks["resume2"] = len(standin.requests)
        # A new session of the same project starts with the project's memory (open tasks).
        fresh = _run(claude, project, env, "Hello again")
        assert fresh != sid
    finally:
        daemons.stop_all()
        server.shutdown()
        server.server_close()
    wall = time.monotonic() - started
    print(f"real client session ({'daemon' if with_daemon else 'no daemon'}): {wall:.1f} s")
    (tmp_path / "requests.json").write_text(json.dumps(standin.requests))

    reqs = standin.requests
    main = [(i, b) for i, b in enumerate(reqs) if _is_main(b) and not _is_compaction(b)]
    compactions = [i for i, b in enumerate(reqs) if _is_compaction(b)]
    assert len(compactions) == 2, compactions  # the auto one and /compact
    auto, manual = compactions
    assert auto < marks["run1"] <= manual < marks["compact"]
    # Never before the first compaction, in no subagent's request.
    for i, body in enumerate(reqs):
        if i < auto or not _is_main(body):
            assert _copies(body) == [], i
    # After each compaction: exactly one copy, the one recorded for that compaction.
    after_auto = [_copies(b) for i, b in main if auto < i < marks["run1"]]
    assert after_auto and all(len(c) == 1 for c in after_auto), after_auto
    later = [_copies(b) for i, b in main if manual < i < marks["resume2"]]
    assert later and all(len(c) == 1 for c in later), later
    # The manual compaction's notes replaced the first ones.
    first = next(_notes_texts(b) for i, b in main if auto < i < marks["run1"])
    second = next(_notes_texts(b) for i, b in main if manual < i < marks["resume2"])
    assert len(first) == len(second) == 1
    assert first != second

    # The new session: the project memory once, with the task left open; no session notes.
    startup = [b for i, b in main if i >= marks["resume2"]]
    assert startup
    for body in startup:
        sent = json.dumps(body["messages"], ensure_ascii=False)
        assert sent.count("ctxd project memory") == 1 and "Document the export" in sent
        assert "Fix the CSV export (" not in sent and _copies(body) == []

    # The index: every event and agent where it belongs.
    state = project / ".ctxd"
    poll(lambda: run_cli("ingest", state_dir=state).returncode == 0, 60)
    agents = query(
        state,
        "SELECT agent_id, agent_type, cc_agent_id FROM agents"
        " WHERE session_id=? ORDER BY started_ns",
        (sid,),
    )
    assert len(agents) == 2 and agents[0][0] == "scout-1", agents
    assert agents[1][0].startswith("general-purpose-") and all(a[2] for a in agents), agents
    scout_tools = query(
        state,
        "SELECT tool_name FROM entries WHERE session_id=? AND"
        " agent_id='scout-1' AND event='tool_result'",
        (sid,),
    )
    assert scout_tools == [("Read",)]
    bg_tools = query(
        state,
        "SELECT tool_name FROM entries WHERE session_id=? AND agent_id=? AND event='tool_result'",
        (sid, agents[1][0]),
    )
    assert bg_tools == [("Bash",)]
    stops = query(
        state,
        "SELECT agent_id, event FROM entries WHERE session_id=? AND"
        " hook_event='SubagentStop' AND event='compact_summary'",
        (sid,),
    )
    assert stops == [("main", "compact_summary")] * 2
    failures = query(
        state, "SELECT tool_name FROM entries WHERE session_id=? AND event='tool_failure'", (sid,)
    )
    assert failures == [("Bash",)]
    main_tools = query(
        state,
        "SELECT DISTINCT tool_name FROM entries WHERE session_id=? AND agent_id='main'"
        " AND event IN ('tool_result','tool_failure') ORDER BY 1",
        (sid,),
    )
    assert main_tools == [
        ("Bash",),
        ("Edit",),
        ("Read",),
        ("TaskCreate",),
        ("TaskUpdate",),
        ("ToolSearch",),
    ], main_tools
    todos = json.loads((state / "sessions" / sid / "todos.json").read_text())["todos"]
    assert {t["content"]: t["status"] for t in todos} == {
        "Fix the CSV export": "completed",
        "Document the export": "pending",
    }
    for name in (agents[0][0], agents[1][0]):
        assert (state / "sessions" / sid / f"{name}.jsonl").exists()
    # Users may name an agent by Claude Code's id: it reads the same entries.
    by_cc = run_cli("read", "--agent-id", agents[1][2], "--session", sid[:8], state_dir=state)
    assert by_cc.returncode == 0 and json.loads(by_cc.stdout)["entries"], by_cc.stderr
    log = [
        json.loads(x) for x in (state / "resume" / sid / "starts.jsonl").read_text().splitlines()
    ]
    assert [(r["source"], r["injected"]) for r in log] == [
        ("startup", False),
        ("compact", True),
        ("resume", False),
        ("compact", True),
        ("resume", False),
        ("resume", False),
    ], log
