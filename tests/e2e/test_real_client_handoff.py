"""The real Claude Code CLI hands ctxd's SubagentStart context to the subagents it starts.

An `AgentId: scout-1` subagent runs in one session; in the next session it is started again
and its first request holds its own earlier outcome; a subagent that names nothing, started
beside it, gets nothing; one with `Task:`/`Role:` lines gets its task's role export; and the
first run of scout-1 got nothing either (it had not run yet).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from claude_standin import Plan, Standin, serve, text, tool
from helpers import poll, run_cli
from resume_story import Daemons
from test_real_client import _claude, _run, client_env, standin_env

OUTCOME = "app.py prints a greeting and nothing else."
HANDOFF = "ctxd's record of agent scout-1's previous run"
TASK = {"task_snapshot": {"title": "Stream the CSV export in constant memory"}}


def _plans(project: Path) -> dict[str, Plan]:
    app = str(project / "app.py")
    scout = "AgentId: scout-1\n[[plan:{}]] Look at app.py and say what it does."
    return {
        "first": Plan(
            [
                [
                    tool(
                        "Agent",
                        description="scout",
                        subagent_type="general-purpose",
                        prompt=scout.format("scout"),
                    )
                ],
                [text("Scouted.")],
            ]
        ),
        "scout": Plan([[tool("Read", file_path=app)], [text(OUTCOME)]]),
        "second": Plan(
            [
                [
                    tool(
                        "Agent",
                        description="plain",
                        subagent_type="general-purpose",
                        prompt="[[plan:plain]] Count the files.",
                    )
                ],
                [
                    tool(
                        "Agent",
                        description="review",
                        subagent_type="general-purpose",
                        prompt="Task: TASK-0824\nRole: reviewer\n[[plan:review]] Review the change.",
                    )
                ],
                [
                    tool(
                        "Agent",
                        description="scout again",
                        subagent_type="general-purpose",
                        prompt=scout.format("again"),
                    )
                ],
                [text("Done.")],
            ]
        ),
        "plain": Plan([[text("One file.")]]),
        "review": Plan([[text("Looks right.")]]),
        "again": Plan([[text("Still a greeting.")]]),
    }


def _first_request(reqs: list[dict[str, Any]], plan: str) -> str:
    """The whole first request body of the (sub)agent whose prompt starts plan `plan`."""
    mark = f"[[plan:{plan}]]"
    for body in reqs:
        if mark in json.dumps(body["messages"][:1]):
            return json.dumps(body, ensure_ascii=False)
    raise AssertionError(f"no request for {plan}")


@pytest.mark.parametrize("with_daemon", [False, True], ids=["no-daemon", "daemon"])
def test_subagents_get_their_own_earlier_outcome(tmp_path: Path, with_daemon: bool) -> None:
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
    env = standin_env(base_env, port)
    daemons = Daemons()
    try:
        if with_daemon:
            daemons.start(project / ".ctxd")
        first = _run(claude, project, env, "Scout the code [[plan:first]]")
        account = project / ".ctxd" / "handoff" / "agents" / "scout-1.md"
        if with_daemon:  # the daemon replaces the hook's short account by the index's fuller one
            poll(lambda: account.exists() and "app.py (read)" in account.read_text(), 60)
        # The task store's role export (as `ctxd task init` writes it) for the reviewer.
        export = project / ".ctxd" / "tasks" / "TASK-0824" / "context-reviewer.json"
        export.parent.mkdir(parents=True)
        export.write_text(json.dumps({"task_id": "TASK-0824", "role": "reviewer", **TASK}))
        second = _run(claude, project, env, "Scout again [[plan:second]]")
        assert first != second
    finally:
        daemons.stop_all()
        server.shutdown()
        server.server_close()
    (tmp_path / "requests.json").write_text(json.dumps(standin.requests))
    reqs = standin.requests
    # Its first run: scout-1 had never run, so nothing was handed over.
    assert "ctxd's record" not in _first_request(reqs, "scout")
    # Started again in the next session: its own earlier instruction and outcome, once.
    again = _first_request(reqs, "again")
    assert again.count(HANDOFF) == 1, again[-3000:]
    assert OUTCOME in again and "Look at app.py and say what it does." in again
    if with_daemon:
        assert "app.py (read)" in again  # its files, from the index
    # The subagent that names nothing gets nothing, although it started first.
    assert "ctxd's record" not in _first_request(reqs, "plain")
    # The one naming a cached task and a role gets that role's export.
    review = _first_request(reqs, "review")
    assert "ctxd task context for TASK-0824, role reviewer" in review
    assert "Stream the CSV export in constant memory" in review and HANDOFF not in review
