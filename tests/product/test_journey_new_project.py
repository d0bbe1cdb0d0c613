"""A new user's first project, with the installed wheel and the real Claude Code CLI (2.1.330).

`git init`, `ctxd init`, `ctxd start`, a scripted session (a named and an unnamed subagent, a
failing then passing Bash), `/compact` then `--resume` (the notes arrive exactly once), then
`ctxd search`, `ctxd view`, `ctxd mcp` over stdio, the task handoff across implementer and
reviewer in this same repository (a hand edit caught), `ctxd stop`, and `ctxd init --uninstall`
leaving `.claude/` and `.gitignore` as they were. Every command is the installed one, run from
the project like a user's; nothing imports the checkout.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from claude_standin import COMPACT_ASK, Plan, Standin, serve, text, tool
from helpers import poll
from installed import Installed
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from test_real_client import _claude, _copies, _run, standin_env

FIRST_PROMPT = "Make the greeting in app.py louder, the puffin audit needs it [[plan:work]]"
USER_SETTINGS = {"permissions": {"allow": ["Bash(ls:*)"]}}
TASK_FILE = """\
title: Greet louder
priority: P2
area: app
description: Make the greeting louder.
scope:
  in: [app.py]
acceptance_criteria: [the greeting is uppercase]
standards:
  - file: standards/python.md
    section: Style
qa:
  commands: [python3 app.py]
"""


def _git(project: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=dev", "-c", "user.email=dev@example.com", *args],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _new_project(root: Path) -> Path:
    project = root / "proj"
    (project / "standards").mkdir(parents=True)
    (project / "tasks").mkdir()
    (project / ".claude").mkdir()
    (project / "app.py").write_text("print('hi')\n")
    (project / "standards" / "python.md").write_text("# Python\n\n## Style\n\nShout.\n")
    (project / "tasks" / "TASK-1.task.yaml").write_text(TASK_FILE)
    (project / ".gitignore").write_text("node_modules/\n")
    (project / ".claude" / "settings.json").write_text(json.dumps(USER_SETTINGS, indent=2))
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "start")
    return project


def _plans(project: Path) -> dict[str, Plan]:
    app = str(project / "app.py")
    return {
        "work": Plan(
            [
                [tool("Edit", file_path=app, old_string="hi", new_string="HI")],
                [tool("Bash", command="python3 -c 'import sys; sys.exit(3)'", description="check")],
                [tool("Bash", command="python3 app.py", description="check again")],
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
                        prompt="[[plan:lister]] List the python files.",
                    )
                ],
                [text("The greeting is louder now.")],
            ]
        ),
        "scout": Plan([[tool("Read", file_path=app)], [text("app.py prints a greeting.")]]),
        "lister": Plan(
            [[tool("Bash", command="ls", description="list files")], [text("One: app.py.")]]
        ),
        "more": Plan([[tool("Read", file_path=app)], [text("Still loud.")]]),
    }


def _is_main(body: dict[str, Any]) -> bool:
    first = json.dumps(body["messages"][:1])
    return "[[plan:scout]]" not in first and "[[plan:lister]]" not in first


def _mcp_search(installed: Installed, project: Path, words: str) -> str:
    params = StdioServerParameters(
        command=str(installed.bin / "ctxd"), args=["mcp"], env=installed.env(), cwd=str(project)
    )

    async def ask() -> str:
        async with Client(params, read_timeout_seconds=120) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert "search" in tools, tools
            result = await client.call_tool("search", {"query": words})
            assert not result.is_error, result
            return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")

    return asyncio.run(ask())


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"


def test_new_project_journey(installed: Installed, tmp_path: Path) -> None:
    claude = _claude()
    project = _new_project(tmp_path)
    env = installed.env()

    def ctxd(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = installed.run("ctxd", *args, cwd=project, env=env)
        if ok:
            assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
        return done

    gitignore_before = (project / ".gitignore").read_bytes()
    claude_before = {p.name: p.read_bytes() for p in (project / ".claude").iterdir()}

    ctxd("init")
    started = ctxd("start")
    status = json.loads(ctxd("status", "--json").stdout)
    assert status["daemon"] and status["daemon"]["pid"], (started.stdout, status)
    pid = int(status["daemon"]["pid"])

    standin = Standin(_plans(project))
    server, port = serve(standin)
    client_env = standin_env(env, port)
    try:
        sid = _run(claude, project, client_env, FIRST_PROMPT)
        before_compact = len(standin.requests)
        assert _run(claude, project, client_env, "/compact", "--resume", sid) == sid
        compacted = len(standin.requests)
        _run(claude, project, client_env, "Check app.py again [[plan:more]]", "--resume", sid)
    finally:
        server.shutdown()
        server.server_close()

    # The daemon started by `ctxd start` lived through the session and indexed all of it.
    assert _pid_alive(pid), "the daemon died"
    ctxd("ingest")
    status = json.loads(ctxd("status", "--json").stdout)
    assert status["daemon"] and status["daemon"]["pid"] == pid, status
    assert status["lag"]["lines"] == 0 and status["entries"] > 0, status

    # Notes: none before the compaction, exactly one copy in every main request after it.
    reqs = standin.requests
    assert all(_copies(b) == [] for b in reqs[:before_compact])
    after = [
        b
        for b in reqs[compacted:]
        if _is_main(b) and COMPACT_ASK not in json.dumps(b["messages"][-1:])
    ]
    assert after and all(len(_copies(b)) == 1 for b in after), [_copies(b) for b in after]

    # Both subagents and the failing then passing command are in the index.
    names = [a["agent_id"] for a in json.loads(ctxd("agents", sid, "--json").stdout)]
    assert "scout-1" in names and len(names) == 2, names
    failures = ctxd("search", "sys.exit", "--kind", "error", "--json")
    assert json.loads(failures.stdout), failures.stdout

    # Search finds the first prompt; the page is written; MCP answers the same search.
    found = json.loads(ctxd("search", "puffin audit", "--json").stdout)
    assert any(hit["session_id"] == sid for hit in found), found
    page = Path(ctxd("view", sid).stdout.strip().splitlines()[-1])
    assert page.is_file() and page.stat().st_mode & 0o777 == 0o600, page
    assert "puffin" in page.read_text()
    answer = _mcp_search(installed, project, "puffin audit")
    assert sid in answer and "puffin" in answer, answer

    # The task handoff in this repository, whose .ctxd/ `ctxd init` put in .gitignore.
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "after the session")
    ctxd("task", "init", "TASK-1", "--task-file", "tasks/TASK-1.task.yaml")
    ctxd("task", "update-agent", "TASK-1", "--agent", "implementer", "--status", "in_progress")
    (project / "app.py").write_text("print('HI!')\n")
    ctxd("task", "snapshot-worktree", "TASK-1", "--agent", "implementer")
    ctxd("task", "update-agent", "TASK-1", "--agent", "implementer", "--status", "done")
    ctxd("task", "update-agent", "TASK-1", "--agent", "reviewer", "--status", "in_progress")
    (project / "app.py").write_text("print('HI!')  # reviewed\n")
    ctxd("task", "snapshot-worktree", "TASK-1", "--agent", "reviewer")
    ctxd("task", "verify-worktree", "TASK-1", "--expected-agent", "reviewer")
    ctxd("task", "update-agent", "TASK-1", "--agent", "reviewer", "--status", "done")
    (project / "notes.txt").write_text("edited by hand\n")
    drift = ctxd("task", "verify-worktree", "TASK-1", "--expected-agent", "reviewer", ok=False)
    assert drift.returncode != 0 and "notes.txt" in drift.stdout + drift.stderr, drift
    refused = ctxd(
        "task",
        "update-agent",
        "TASK-1",
        "--agent",
        "validator",
        "--status",
        "in_progress",
        ok=False,
    )
    assert refused.returncode != 0 and "drift" in (refused.stdout + refused.stderr).lower()

    # Stop, then uninstall: the user's files are as they were.
    ctxd("stop")
    poll(lambda: not _pid_alive(pid), 30)
    ctxd("init", "--uninstall")
    assert (project / ".gitignore").read_bytes() == gitignore_before
    assert {p.name: p.read_bytes() for p in (project / ".claude").iterdir()} == claude_before
