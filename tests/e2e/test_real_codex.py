"""The real Codex CLI (0.171.0) against a scripted Responses API stand-in, with ctxd's hooks as
`ctxd init --host codex` installs them (trusted, no bypass of Codex's hook trust).

A session: a failing command, a patch, the same command passing, a subagent named by
`AgentId:`, a lint left failing; resumed, Codex compacts first. The request bodies show where
ctxd's notes arrive (once, in the first request after the compaction, never before); the
index shows every event where it belongs; an import of the session's rollouts adds nothing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from claude_standin import Plan
from codex_client import codex_cli, codex_env, run_codex, write_config
from codex_standin import CodexStandin, exec_call, patch, reply, serve, spawn, wait_agent
from helpers import query, run_cli
from resume_story import Daemons

TEST_CMD = "python3 -c \"import sys, export; sys.exit(0 if export.header()[-1] == 'total' else 1)\""
FIX = (
    "*** Begin Patch\n*** Update File: export.py\n@@\n-    return ['id', 'amount']\n"
    "+    return ['id', 'amount', 'total']\n*** End Patch\n"
)
NOTES = re.compile(r"ctxd notes for session [^\n\\]*")


def _plans(project: Path) -> dict[str, Plan]:
    work = [
        [exec_call(TEST_CMD)],
        [patch(FIX)],
        [exec_call(TEST_CMD)],
        [spawn("AgentId: reviewer-001\nReview export.py [[plan:review]]")],
        [wait_agent()],  # so that the subagent ends within the turn
        [exec_call("python3 -c 'import sys; print(\"E501 line too long\"); sys.exit(2)'")],
        [reply("The header is fixed and tested; the lint error is left for later.")],
    ]
    return {
        # The last turn reports a nearly full window: the next turn compacts first.
        "work": Plan(work, usage={6: 200_000}),
        "review": Plan([[exec_call("grep -n total export.py")], [reply("Reviewed: fine.")]]),
    }


def _texts(body: dict[str, Any]) -> str:
    return json.dumps(body.get("input", []), ensure_ascii=False)


def test_real_codex_session(tmp_path: Path) -> None:
    codex_cli()
    project, home, codex_home = tmp_path / "proj", tmp_path / "home", tmp_path / "codex-home"
    project.mkdir()
    home.mkdir()
    (project / ".git").mkdir()
    (project / "export.py").write_text("def header():\n    return ['id', 'amount']\n")
    standin = CodexStandin(_plans(project), summary="The export header fix is in progress.")
    server, port = serve(standin)
    write_config(codex_home, port, project)
    env = codex_env(home, codex_home)
    try:
        init = run_cli("init", "--host", "codex", cwd=project, env=env)
        assert init.returncode == 0, init.stderr
        assert "turned on Codex's hooks feature" in init.stdout and "note:" not in init.stdout
        sid = run_codex(project, env, "Fix the CSV export header [[plan:work]]")
        first_run = len(standin.requests)
        assert run_codex(project, env, "Now document the export", resume=sid) == sid
    finally:
        server.shutdown()
        server.server_close()
    (tmp_path / "requests.json").write_text(json.dumps(standin.requests))

    reqs = standin.requests
    compactions = [i for i, b in enumerate(reqs) if standin.is_compaction(b)]
    assert len(compactions) == 1 and compactions[0] >= first_run, compactions
    after = compactions[0] + 1
    # Nothing before the compaction (the project had no memory yet), nothing in it; after it,
    # the notes once in the next request (Codex's SessionStart "compact", not "resume").
    for i, body in enumerate(reqs[:after]):
        assert NOTES.findall(_texts(body)) == [], i
    notes = NOTES.findall(_texts(reqs[after]))
    assert len(notes) == 1, notes
    sent = _texts(reqs[after])
    assert "E501 line too long" in sent  # the failure left open
    assert "The export header fix is in progress." in sent  # Codex's own summary
    assert len(sent.encode()) < 200_000
    state = project / ".ctxd"
    log = [json.loads(x) for x in (state / "resume" / sid / "starts.jsonl").read_text().split("\n") if x]
    assert [(r["source"], r["injected"]) for r in log] == [
        ("startup", False), ("resume", False), ("compact", True),
    ], log  # fmt: skip

    # The index: the session is Codex's, its events in Claude Code's terms.
    listed = run_cli("sessions", "--json", cwd=project, env=env)
    (info,) = json.loads(listed.stdout)
    assert (info["session_id"], info["host"]) == (sid, "codex")
    rows = query(state, "SELECT event, tool_name, agent_id, description, error FROM entries"
                        " WHERE session_id=? ORDER BY ts_ns", (sid,))  # fmt: skip
    tests = [(r[0], r[4].split("\n")[0]) for r in rows if r[1] == "Bash" and "export.header" in r[3]]
    assert tests == [("tool_failure", "Exit code 1"), ("tool_result", "")], tests
    assert [r[0] for r in rows if r[1] == "apply_patch"] == ["tool_result"]
    assert [r[2] for r in rows if r[1] == "Bash" and "grep" in r[3]] == ["reviewer-001"]
    assert query(state, "SELECT agent_id, status FROM agents") == [("reviewer-001", "completed")]
    summaries = query(state, "SELECT text FROM entries WHERE event='post_compact'")
    assert summaries == [("The export header fix is in progress.",)]

    # Its page: the failing test passed after the patch.
    page = tmp_path / "page.html"
    assert run_cli("view", sid, "-o", str(page), cwd=project, env=env).returncode == 0
    assert "after: apply_patch export.py" in page.read_text()

    # Its rollouts hold nothing the hooks did not capture.
    before = query(state, "SELECT count(*) FROM entries")
    imported = run_cli("import", "--host", "codex", cwd=project, env=env)
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.startswith("imported 0 entries"), imported.stdout
    assert "of 2 Codex rollouts" in imported.stdout  # the thread's and its subagent's
    assert query(state, "SELECT count(*) FROM entries") == before

    gone = run_cli("init", "--host", "codex", "--uninstall", cwd=project, env=env)
    assert gone.returncode == 0, gone.stderr
    assert "trusted_hash" not in (codex_home / "config.toml").read_text()


def test_real_codex_compaction_mid_turn_with_the_daemon(tmp_path: Path) -> None:
    # The window fills during a turn: Codex compacts between two of its requests and runs
    # SessionStart "compact" there, with no resume; the daemon indexes as the session goes.
    codex_cli()
    project, home, codex_home = tmp_path / "proj", tmp_path / "home", tmp_path / "codex-home"
    project.mkdir()
    home.mkdir()
    (project / ".git").mkdir()
    (project / "export.py").write_text("def header():\n    return ['id', 'amount']\n")
    work = [[exec_call(TEST_CMD)], [patch(FIX)], [exec_call(TEST_CMD)], [reply("Done.")]]
    standin = CodexStandin({"work": Plan(work, usage={1: 200_000})})
    server, port = serve(standin)
    write_config(codex_home, port, project)
    env = codex_env(home, codex_home)
    daemons = Daemons()
    try:
        assert run_cli("init", "--host", "codex", cwd=project, env=env).returncode == 0
        daemons.start(project / ".ctxd")
        sid = run_codex(project, env, "Fix the CSV export header [[plan:work]]")
    finally:
        daemons.stop_all()
        server.shutdown()
        server.server_close()
    reqs = standin.requests
    compactions = [i for i, b in enumerate(reqs) if standin.is_compaction(b)]
    assert len(compactions) == 1, compactions
    after = compactions[0] + 1
    assert after < len(reqs)  # the turn went on after the compaction
    for i, body in enumerate(reqs):
        expected = 1 if i == after else 0
        assert len(NOTES.findall(_texts(body))) == expected, (i, after)
    sent = _texts(reqs[after])
    assert "export.header()" in sent  # the failing test command, in the notes
    log = [json.loads(x) for x in (project / ".ctxd" / "resume" / sid / "starts.jsonl")
           .read_text().split("\n") if x]  # fmt: skip
    assert [(r["source"], r["injected"]) for r in log] == [("startup", False), ("compact", True)]
