"""Planted secrets never leave the spool: every kind, every form, every field, every output.

Writes one spool event per (secret value, form, field) as the hook writes it (tests/e2e/
planted_events.py), then runs the real CLI as subprocesses (ingest, compact, rebuild, every read
command, search, the HTML page), the real `ctxd mcp` through the MCP SDK's stdio client, the
real SessionStart hook (notes handed back, the project memory at startup, and the notes read
from the spool's tail when the full notes are not ready), and the task cache built from the
Claude Code tasks the index holds; then searches every byte ctxd wrote outside the spool
(index.db with its WAL and free pages, views, context, resume, task and page files, the
daemon's log) and every output for each value. The real `ctxd ingest` and daemon also run with
a bug that makes every planted event raise an exception quoting it, so that the logged
exception path is searched too. Also counts the redactions the rules make on the real corpus
(each one a false positive: the corpus holds no live secret) and prints both numbers.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers import CORPUS, REPO, clean_env, hook_env, poll, query, run_cli, run_hook
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from planted_events import (
    FAULT_CLI,
    FAULT_DAEMON,
    FIELDS,
    FORMS,
    needles,
    write_fault_segment,
    write_spool,
)
from planted_secrets import PLANTED, fingerprint
from task_helpers import make_repo

from indexer.config import TasksConfig
from indexer.queries import history
from indexer.redact.text import redact_text
from summarizer.resume.todos import session_todos
from summarizer.tasks import service
from summarizer.tasks.env import TaskEnv

FP_LIMIT = 40  # the corpus count measured when the rules were written (see docs/secrets.md)
FAULT = Path(__file__).resolve().parents[1] / "data" / "faults" / "quote_payload"
# Words of the contexts the secrets stand in: each search shows the best 100 snippets.
SEARCH_WORDS = ("password", "token", "key", "secret", "login", "curl", "export", "machine")
NO_TIME = "[resume]\nprebuild = false\nbuild_timeout_s = 0.001\n"
TAIL_FIELDS = ("prompt", "file-path", "read", "write")  # what the notes from the tail show


def _quarantined(state: Path, name: str) -> int:
    return int(query(state, "SELECT count(*) FROM quarantine WHERE name=?", (name,))[0][0])


def _run_with_fault(state: Path, outputs: list[str], tmp: Path) -> None:
    """`ctxd ingest` (its warnings go to the terminal), then the daemon (to its log), each on
    a segment whose every line makes the faulty code raise with the line's secret."""
    env = hook_env(state, PYTHONPATH=f"{FAULT}{os.pathsep}{REPO}")
    ctxd = [sys.executable, "-m", "summarizer.cli.app"]
    n = write_fault_segment(state, FAULT_CLI)
    r = subprocess.run(
        [*ctxd, "ingest"], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    outputs.append(f"$ ctxd ingest (with the fault)\n{r.stdout}\n{r.stderr}")
    assert _quarantined(state, FAULT_CLI) == n, r.stderr[-2000:]
    write_fault_segment(state, FAULT_DAEMON)
    out = tmp / "daemon.out"  # outside the state dir: searched as an output
    with out.open("wb") as f:
        daemon = subprocess.Popen([*ctxd, "run"], env=env, stdout=f, stderr=f)
        try:
            poll(lambda: _quarantined(state, FAULT_DAEMON) == n, timeout=300)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=120)
    outputs.append(f"$ ctxd run (with the fault)\n{out.read_text()}")


def _session_start(state: Path, session: str, source: str) -> str:
    start = {
        "session_id": session,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/home/dev/app",
        "hook_event_name": "SessionStart",
        "source": source,
    }
    r = run_hook(json.dumps(start).encode(), hook_env(state))
    return f"$ SessionStart {source} {session}\n{r.stdout.decode()}\n{r.stderr.decode()}"


def _mcp_answers(state: Path) -> list[str]:
    """Every tool of the real `ctxd mcp`, with the largest budget, on every planted session."""
    big = {"budget": 10000}
    calls: list[tuple[str, dict[str, Any]]] = [("sessions", {"limit": 200, **big})]
    calls += [("failures", big), ("decisions", big)]
    calls += [("search", {"query": w, "limit": 100, **big}) for w in SEARCH_WORDS]
    for field in FIELDS:
        session = f"planted-{field}"
        calls.append(("session", {"session": session, **big}))
        calls.append(
            ("agent_history", {"agent_id": "main", "session": session, "lines": 1000, **big})
        )
        calls.append(("failures", {"session": session, **big}))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "summarizer.cli.app", "mcp"],
        env=clean_env(CTXD_HOME=str(state), PYTHONPATH=str(REPO)),
    )

    async def run() -> list[str]:
        async with Client(params, read_timeout_seconds=300) as client:
            results = [await client.call_tool(name, args) for name, args in calls]
        return [
            "".join(c.text for c in r.content if getattr(c, "type", "") == "text") for r in results
        ]

    answers = asyncio.run(run())
    return [f"$ mcp {name} {args}\n{a}" for (name, args), a in zip(calls, answers, strict=True)]


def _task_cache(state: Path, tmp: Path, where: dict[int, Any]) -> int:
    """The first value of each kind, as a Claude Code task the index holds, cached as a task
    context (in process: a CLI run per task would take minutes); one more through the CLI."""
    repo = make_repo(tmp / "task-repo")
    config = TasksConfig(citations={"*": ["standards/global.md#Evidence Requirements"]})
    env = TaskEnv(state_root=state, repo=repo, config=config, actor="tester")
    conn = history.connect(state / "index.db", readonly=True)
    try:
        todos = {t.id: t for t in session_todos(conn, "planted-task-create") if t.source == "task"}
    finally:
        conn.close()
    seen: set[str] = set()
    cached = 0
    for n, (p, form) in sorted(where.items()):
        todo = todos.get(str(n))
        if todo is None or form != "plain" or p.kind in seen:
            continue
        seen.add(p.kind)
        task = {"id": todo.id, "subject": todo.content, "description": todo.description}
        service.init_context(
            env, f"TASK-{n}", claude_task={**task, "session": "planted-task-create"}
        )
        cached += 1
    (state / "config.toml").write_text(
        '[tasks]\ncitations = { "*" = ["standards/global.md#Evidence Requirements"] }\n'
    )
    first = min(int(t) for t in todos)
    r = run_cli(
        "task", "init", "TASK-CLI", "--from-claude-task", str(first), "--session",
        "planted-task-create", "--repo", str(repo), state_dir=state,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return cached


@pytest.fixture(scope="module")
def planted_state(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    tmp = tmp_path_factory.mktemp("planted")
    state = tmp / ".ctxd"
    where = write_spool(state)
    outputs: list[str] = []

    def cli(*args: str) -> None:
        r = run_cli(*args, state_dir=state, timeout=600)
        outputs.append(f"$ ctxd {' '.join(args)}\n{r.stdout}\n{r.stderr}")

    # The notes from the spool's tail (the latest prompt, the files read and edited lately):
    # each session's lines alone in a spool, with no time to build the full notes.
    segment = (state / "spool" / "20260101T00.jsonl").read_bytes().splitlines(keepends=True)
    for field in TAIL_FIELDS:
        tail_only = tmp / f"tail-only-{field}" / ".ctxd"
        (tail_only / "spool").mkdir(parents=True, mode=0o700)
        mark = f'"session_id":"planted-{field}"'.encode()
        (tail_only / "spool" / "20260101T00.jsonl").write_bytes(
            b"".join(line for line in segment if mark in line)
        )
        (tail_only / "config.toml").write_text(NO_TIME)
        outputs.append(_session_start(tail_only, f"planted-{field}", "compact"))

    cli("ingest")
    _run_with_fault(state, outputs, tmp)
    cli("compact")
    cli("rebuild")
    for field in FIELDS:
        session = f"planted-{field}"
        for fmt in ("json", "text"):
            cli(
                "read",
                "--agent-id",
                "main",
                "--session",
                session,
                "--lines",
                "1000",
                "--format",
                fmt,
            )
        cli("resume", session)
        cli("resume", session, "--json")
        outputs.append(_session_start(state, session, "compact"))
        page = tmp / "pages" / f"{session}.html"
        cli("view", session, "-o", str(page))
        outputs.append(f"$ ctxd view {session}\n{page.read_text()}")
    outputs.append(_session_start(state, "planted-next-session", "startup"))
    for agent in ("deployer-100", "general-purpose"):
        cli("read", "--agent-id", agent, "--lines", "1000")
    for word in SEARCH_WORDS:
        cli("search", word, "--limit", "100")
        cli("search", word, "--limit", "100", "--json")
    for fmt in ("json", "markdown"):
        cli("inject", "--format", fmt)
    cli("sessions")
    cli("sessions", "--json")
    cli("status")
    cli("doctor")
    outputs += _mcp_answers(state)
    cached = _task_cache(state, tmp, where)
    assert cached == len({p.kind for p in PLANTED})
    cli("task", "list")
    return state, outputs


_NEEDLES = needles()


def _leaks(blob: bytes) -> Counter[str]:
    return Counter(kind for kind, needle in _NEEDLES if needle in blob)


def test_at_least_100_kinds_and_300_values_planted() -> None:
    assert len({p.kind for p in PLANTED}) >= 100
    assert len(PLANTED) >= 300
    fingerprints = [fingerprint(p.secret) for p in PLANTED]
    assert len(set(fingerprints)) == len(fingerprints)


def test_nothing_leaks_outside_the_spool(planted_state: tuple[Path, list[str]]) -> None:
    state, _ = planted_state
    spool_blob = b"".join(p.read_bytes() for p in (state / "spool").iterdir())
    # The check can fail: every needle is in the spool, which keeps raw payloads by design.
    assert not set(k for k, _ in _NEEDLES) - set(_leaks(spool_blob))
    found: dict[str, list[str]] = {}
    files = [p for p in state.rglob("*") if p.is_file() and "spool" not in p.parts]
    for must in ("index.db", "context.json", "startup.md", "ctxd.log"):
        assert any(p.name == must for p in files), must  # each store was written
    for path in files:
        for kind in _leaks(path.read_bytes()):
            found.setdefault(kind, []).append(str(path.relative_to(state)))
    assert found == {}


def test_the_fault_took_the_logged_exception_path(planted_state: tuple[Path, list[str]]) -> None:
    state, outputs = planted_state
    log = (state / "ctxd.log").read_text()  # searched by test_nothing_leaks_outside_the_spool
    assert f"quarantined {FAULT_DAEMON} line 1 after KeyError in " in log
    cli_run = next(o for o in outputs if o.startswith("$ ctxd ingest (with the fault)"))
    assert f"quarantined {FAULT_CLI} line 1 after KeyError in " in cli_run


def test_the_index_holds_the_events(planted_state: tuple[Path, list[str]]) -> None:
    _state, outputs = planted_state
    ingest = next(o for o in outputs if o.startswith("$ ctxd ingest\n"))
    assert "quarantined" in ingest
    entries = int(re.search(r"(\d+) entries", ingest).group(1))  # type: ignore[union-attr]
    assert entries >= len(PLANTED) * len(FORMS) * len(FIELDS) * 0.9, ingest


def test_nothing_leaks_in_any_output(planted_state: tuple[Path, list[str]]) -> None:
    _, outputs = planted_state
    text = "\n".join(outputs)
    assert "[REDACTED:" in text  # the outputs do show the events, redacted
    # Each output was exercised: the hand-back, the notes from the spool's tail, the project
    # memory at startup, the pages, search and every MCP tool.
    starts = [o for o in outputs if o.startswith("$ SessionStart compact")]
    assert sum("additionalContext" in o for o in starts) >= len(FIELDS)
    assert sum("the full notes were not ready in time" in o for o in starts) == len(TAIL_FIELDS)
    startup = next(o for o in outputs if o.startswith("$ SessionStart startup"))
    assert "ctxd project memory" in startup
    assert sum('class="timeline"' in o for o in outputs) == len(FIELDS)
    assert sum("[REDACTED:" in o for o in outputs if o.startswith("$ ctxd search")) >= 8
    assert sum("[REDACTED:" in o for o in outputs if o.startswith("$ mcp")) >= len(FIELDS)
    leaks = _leaks(text.encode())
    assert leaks == Counter(), [o[:300] for o in outputs if _leaks(o.encode())][:3]


def _corpus_strings() -> list[str]:
    seen: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str):
            seen.add(value)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)

    for path in sorted((CORPUS / "hooks").rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                walk(json.loads(line))
            except ValueError:
                continue
    return sorted(seen)


@pytest.mark.skipif(not (CORPUS / "hooks").is_dir(), reason="the shared corpus is not here")
def test_false_positives_on_the_real_corpus() -> None:
    tag = re.compile(r"\[REDACTED:([a-z0-9-]+)\]")
    kinds: Counter[str] = Counter()
    strings = _corpus_strings()
    for s in strings:
        kinds.update(tag.findall(redact_text(s)))
    planted = len(PLANTED) * len(FORMS) * len(FIELDS)
    print(
        f"\nplanted: {len({p.kind for p in PLANTED})} kinds, {len(PLANTED)} values x "
        f"{len(FORMS)} forms x {len(FIELDS)} fields = {planted} planted secrets (searched by "
        f"the tests above); corpus false positives: {sum(kinds.values())} redactions in "
        f"{len(strings)} distinct strings {dict(kinds)}"
    )
    assert sum(kinds.values()) <= FP_LIMIT
