"""The HTML page and the MCP answers redact what they show, whatever the index holds.

An index written by an earlier ctxd holds, as typed, every password its rules did not know
(command flags, credential files, cookies, prose). The real `ctxd ingest` runs here as that
version did (tests/data/faults/earlier_rules: the rules added since taken out), then the page
and every MCP tool, run by this version through the real CLI and the MCP SDK's stdio client,
must show none of them.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, clean_env, query, run_cli
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from memory_helpers import PROJECT, base, bash, prompt, spool
from planted_secrets import fingerprint

from indexer.index.store import connect

EARLIER = Path(__file__).resolve().parents[1] / "data" / "faults" / "earlier_rules"
SID = "6c2f9e1a-3b4d-4e5f-8a7b-9c0d1e2f3a4b"
SECRETS = {
    "sqlcmd": "Vq3nTr8x+Lm2KpZ7wQs4Yb",
    "mongosh": "Hd7Wb1Yc.5Jf9Ga2Ue6Io0",
    "netrc": "Ks3Hd7Wb^1Yc5Jf9Ga2Ue6",
    "htpasswd": "Np0Ks3Hd~7Wb1Yc5Jf9Ga2",
    "prose": "Lr2Xv6Np#0Ks3Hd7Wb1Yc5",
    "cookie": "Zt8Lr2Xv6Np0Ks3Hd7Wb1Yc5Jf",
}


def _events() -> list[dict[str, Any]]:
    s = SECRETS
    agent = {
        "description": "rotate the proxy login",
        "subagent_type": "general-purpose",
        "prompt": f"AgentId: rotator\nRun htpasswd -b -c /etc/nginx/.htpasswd admin {s['htpasswd']}",
    }
    return [
        prompt(f"Seed the test db: sqlcmd -S db -U sa -P {s['sqlcmd']} -i seed.sql", SID),
        *bash(
            f"mongosh mongodb://db/app -u admin -p {s['mongosh']} --eval 'db.x.drop()'",
            "toolu_01Earlier000000000001",
            error=f"Exit code 1\nauth failed; ~/.netrc has machine db login admin password {s['netrc']}",
            session=SID,
        ),
        base(
            "PreToolUse",
            SID,
            tool_name="Agent",
            tool_input=agent,
            tool_use_id="toolu_01Earlier0000000002",
        ),
        base(
            "PostToolUse",
            SID,
            tool_name="Agent",
            tool_input=agent,
            tool_use_id="toolu_01Earlier0000000002",
            tool_response={
                "status": "completed",
                "content": [{"type": "text", "text": f"Done; the password is {s['prose']}."}],
            },
        ),
        base(
            "Stop",
            SID,
            stop_hook_active=False,
            last_assistant_message=f"Logged in with curl -H 'Cookie: session={s['cookie']}' https://app/",
        ),
        base("PreCompact", SID, trigger="manual", custom_instructions=""),
    ]


def _cli(state: Path, *args: str, earlier: bool = False) -> subprocess.CompletedProcess[str]:
    path = f"{EARLIER}{os.pathsep}{REPO}" if earlier else str(REPO)
    return subprocess.run(
        [sys.executable, "-m", "summarizer.cli.app", *args],
        env=clean_env(CTXD_HOME=str(state), PYTHONPATH=path),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _leaks(text: str) -> list[str]:
    return [kind for kind, secret in SECRETS.items() if fingerprint(secret) in text]


@pytest.fixture(scope="module")
def earlier_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    state = tmp_path_factory.mktemp("earlier") / ".ctxd"
    spool(state, _events(), PROJECT)
    done = _cli(state, "ingest", earlier=True)
    assert done.returncode == 0, done.stderr
    assert _cli(state, "compact").returncode == 0
    # The scenario is real: the index holds every value as typed (searched with SQLite).
    conn = connect(state / "index.db", readonly=True)
    stored = json.dumps(conn.execute("SELECT * FROM entries").fetchall(), default=repr)
    conn.close()
    assert sorted(_leaks(stored)) == sorted(SECRETS)
    return state


def test_the_page_shows_none_of_them(earlier_state: Path, tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    out = run_cli("view", SID[:8], "-o", str(page), state_dir=earlier_state)
    assert out.returncode == 0, out.stderr
    html = page.read_text()
    assert "sqlcmd -S db -U sa -P [REDACTED:sqlcmd-password]" in html  # the event is shown
    assert _leaks(html) == []


def test_no_mcp_answer_shows_them(earlier_state: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": "sqlcmd"}),
        ("search", {"query": "password"}),
        ("search", {"query": "mongosh"}),
        ("sessions", {}),
        ("session", {"session": SID[:8]}),
        ("agent_history", {"agent_id": "main", "session": SID}),
        ("agent_history", {"agent_id": "rotator", "session": SID}),
        ("failures", {}),
        ("decisions", {}),
    ]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "summarizer.cli.app", "mcp"],
        env=clean_env(CTXD_HOME=str(earlier_state), PYTHONPATH=str(REPO)),
    )

    async def run() -> list[str]:
        async with Client(params, read_timeout_seconds=60) as client:
            results = [await client.call_tool(name, args) for name, args in calls]
        return [
            "".join(c.text for c in r.content if getattr(c, "type", "") == "text") for r in results
        ]

    answers = asyncio.run(run())
    shown = "\n".join(answers)
    assert "[REDACTED:" in shown and "sqlcmd" in shown  # the answers do show the events
    leaked = [
        (call, _leaks(a), a[:300]) for call, a in zip(calls, answers, strict=True) if _leaks(a)
    ]
    assert leaked == []
    assert query(earlier_state, "SELECT count(*) FROM entries")[0][0] >= 6
