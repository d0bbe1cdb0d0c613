"""The real Claude Code CLI asks ctxd's MCP server: `mcp__ctxd__search` finds an earlier session.

`ctxd init` registers the server in the project's `.mcp.json`; the scripted model of a second
session calls the search tool and must receive a hit from the first session, through Claude
Code's own MCP client.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from claude_standin import Plan, Standin, serve, text, tool
from helpers import run_cli
from test_real_client import _claude, _run, client_env, standin_env


def _tool_results(body: dict[str, Any], tool_id: str) -> list[str]:
    """The text of every tool_result for `tool_id` in one request."""
    found = []
    for message in body.get("messages", []):
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result" and block.get("tool_use_id") == tool_id:
                inner = block.get("content")
                parts = inner if isinstance(inner, list) else [{"text": inner}]
                found.append("".join(str(p.get("text", "")) for p in parts))
    return found


def test_the_model_searches_an_earlier_session(tmp_path: Path) -> None:
    claude = _claude()
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    (project / ".git").mkdir()
    base_env = client_env(home)
    init = run_cli("init", cwd=project, env=base_env)
    assert init.returncode == 0, init.stderr
    assert "ctxd" in json.loads((project / ".mcp.json").read_text())["mcpServers"]
    plans = {
        "first": Plan([[text("Noted: the kittiwake ledger migrates on Friday.")]]),
        "recall": Plan(
            [
                [tool("ToolSearch", query="select:mcp__ctxd__search", max_results=5)],
                [tool("mcp__ctxd__search", query="kittiwake ledger")],
                [text("Found it in the earlier session.")],
            ]
        ),
    }
    standin = Standin(plans)
    server, port = serve(standin)
    env = standin_env(base_env, port)
    try:
        first = _run(claude, project, env, "Plan the kittiwake ledger migration [[plan:first]]")
        second = _run(claude, project, env, "What did we plan for the ledger? [[plan:recall]]")
    finally:
        server.shutdown()
        server.server_close()
    assert first != second
    (tmp_path / "requests.json").write_text(json.dumps(standin.requests))
    offered = {t.get("name") for b in standin.requests for t in b.get("tools") or []}
    results = [r for b in standin.requests for r in _tool_results(b, "toolu_recall_1")]
    assert results, f"the search tool was not called; tools offered: {sorted(offered)}"
    answer = results[-1]
    assert "**kittiwake** **ledger**" in answer and first in answer, answer
