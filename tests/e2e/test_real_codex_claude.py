"""One project, the real Claude Code (2.1.330) and the real Codex CLI (0.171.0), each against
its stand-in API, both with ctxd's hooks from `ctxd init --host all`: `ctxd search` finds both
sessions, and each new session's startup memory shows the other client's open failure."""

from __future__ import annotations

import json
from pathlib import Path

from claude_standin import Plan, Standin, text, tool
from claude_standin import serve as serve_claude
from codex_client import codex_cli, codex_env, run_codex, write_config
from codex_standin import CodexStandin, exec_call, reply
from codex_standin import serve as serve_codex
from helpers import run_cli
from test_real_client import _claude, _run, standin_env

CLAUDE_FAILS = "python3 -c 'import sys; print(\"FAILED test_totals: rounding\"); sys.exit(1)'"
CODEX_FAILS = "python3 -c 'import sys; print(\"E501 line too long\"); sys.exit(2)'"
MEMORY = "ctxd project memory"


def test_claude_code_and_codex_share_one_memory(tmp_path: Path) -> None:
    claude, _ = _claude(), codex_cli()
    project, home, codex_home = tmp_path / "proj", tmp_path / "home", tmp_path / "codex-home"
    project.mkdir()
    home.mkdir()
    (project / ".git").mkdir()
    claude_api = Standin({
        "totals": Plan([[tool("Bash", command=CLAUDE_FAILS, description="run the totals test")],
                        [text("The totals test still fails on rounding.")]]),
        "again": Plan([[text("Noted.")]]),
    })  # fmt: skip
    codex_api = CodexStandin({
        "lint": Plan([[exec_call(CODEX_FAILS)], [reply("The lint error in the export is open.")]]),
    })  # fmt: skip
    claude_server, claude_port = serve_claude(claude_api)
    codex_server, codex_port = serve_codex(codex_api)
    write_config(codex_home, codex_port, project)
    env = standin_env(codex_env(home, codex_home, PYTHONPATH=""), claude_port)
    try:
        init = run_cli("init", "--host", "all", cwd=project, env=env)
        assert init.returncode == 0, init.stderr
        claude_sid = _run(claude, project, env, "Fix the CSV export totals [[plan:totals]]")
        assert run_cli("compact", cwd=project, env=env).returncode == 0
        codex_mark = len(codex_api.requests)
        codex_sid = run_codex(project, env, "Lint the CSV export [[plan:lint]]")
        assert run_cli("compact", cwd=project, env=env).returncode == 0
        claude_mark = len(claude_api.requests)
        _run(claude, project, env, "Where are we? [[plan:again]]")
    finally:
        for server in (claude_server, codex_server):
            server.shutdown()
            server.server_close()

    # Codex's first request: the memory once, with Claude Code's open failure.
    sent = json.dumps(codex_api.requests[codex_mark]["input"], ensure_ascii=False)
    assert sent.count(MEMORY) == 1, sent[-3000:]
    assert "sys.exit(1)" in sent and "Claude Code), recorded" in sent  # whose session left it
    # The new Claude Code session's: Codex's open failure.
    sent = json.dumps(claude_api.requests[claude_mark]["messages"], ensure_ascii=False)
    assert sent.count(MEMORY) == 1, sent[-3000:]
    assert "E501" in sent and "(in a Codex session)" in sent

    found = run_cli("search", "CSV export", "--json", cwd=project, env=env)
    assert found.returncode == 0, found.stderr
    sessions = {hit["session_id"] for hit in json.loads(found.stdout)}
    assert {claude_sid, codex_sid} <= sessions
    listed = {s["session_id"]: s["host"] for s in json.loads(
        run_cli("sessions", "--json", cwd=project, env=env).stdout)}  # fmt: skip
    assert listed[claude_sid] == "claude" and listed[codex_sid] == "codex"
