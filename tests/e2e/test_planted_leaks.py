"""Planted secrets never leave the spool: every kind, every form, every field, every output.

Writes one spool event per (secret kind, form, field) as the hook writes it, then runs the real
CLI as subprocesses (ingest, compact, rebuild, every read command) and the real SessionStart
hook, and searches every byte ctxd wrote outside the spool (index.db with its WAL and free
pages, views, context and resume files, the daemon's log) and every output for each secret.
The real `ctxd ingest` and daemon also run with a bug that makes every planted event raise an
exception quoting it, so that the logged exception path is searched too. Also counts
the redactions the rules make on the real corpus (each one a false positive: the corpus holds
no live secret) and prints both numbers.
"""

from __future__ import annotations

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
from helpers import CORPUS, REPO, hook_env, poll, query, run_cli, run_hook
from planted_secrets import (
    PLANTED,
    base64_wrapped,
    fingerprint,
    json_escaped,
    url_encoded,
)

from indexer.hook import build_line
from indexer.redact import redact_text

FORMS = ("plain", "wire-escaped", "json-escaped", "url-encoded", "base64")
FP_LIMIT = 40  # the corpus count measured when the rules were written (see the README)
# A bug whose exception quotes the event (tests/data/faults/quote_payload/sitecustomize.py):
# the real `ctxd ingest` and daemon run with it on segments of the session "planted-fault".
FAULT = Path(__file__).resolve().parents[1] / "data" / "faults" / "quote_payload"
FAULT_CLI, FAULT_DAEMON = "20260101T01.jsonl", "20260101T02.jsonl"


def _field_payloads(field: str, text: str, n: int) -> dict[str, Any]:
    """The hook payload that carries text in one field Claude Code sends."""
    tool = {"tool_use_id": f"toolu_planted_{n:06d}"}
    if field == "prompt":
        return {"hook_event_name": "UserPromptSubmit", "prompt": text}
    if field == "bash-input":
        return {
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": text, "description": "run it"},
            **tool,
        }
    if field == "bash-output":
        return {
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "cat notes.txt"},
            "tool_response": {"stdout": text, "stderr": "", "interrupted": False},
            **tool,
        }
    if field == "write":
        return {
            "hook_event_name": "PostToolUse",
            "tool_name": "Write",
            "tool_input": {"file_path": "/home/dev/app/.env", "content": text},
            "tool_response": {"type": "create", "filePath": "/home/dev/app/.env"},
            **tool,
        }
    if field == "read":
        return {
            "hook_event_name": "PostToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": "/home/dev/app/.env"},
            "tool_response": {
                "type": "text",
                "file": {"filePath": "/home/dev/app/.env", "content": text},
            },
            **tool,
        }
    if field == "file-path":
        path = f"/home/dev/app/cache/{text}.json"
        return {
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": path},
            **tool,
        }
    if field == "error":
        return {
            "hook_event_name": "PostToolUseFailure",
            "tool_name": "Bash",
            "tool_input": {"command": "make deploy"},
            "error": f"Exit code 1\n{text}",
            **tool,
        }
    if field == "subagent-prompt":
        return {
            "hook_event_name": "PreToolUse",
            "tool_name": "Agent",
            "tool_input": {
                "description": "deploy",
                "subagent_type": "general-purpose",
                "prompt": f"AgentId: deployer-{n}\n{text}",
            },
            **tool,
        }
    if field == "stop":
        return {
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": text,
        }
    if field == "subagent-stop":
        return {
            "hook_event_name": "SubagentStop",
            "stop_hook_active": False,
            "agent_id": f"a{n:015x}",
            "agent_type": "general-purpose",
            "last_assistant_message": text,
        }
    if field == "compact-summary":
        return {"hook_event_name": "PostCompact", "trigger": "manual", "compact_summary": text}
    raise AssertionError(field)


FIELDS = (
    "prompt",
    "bash-input",
    "bash-output",
    "write",
    "read",
    "file-path",
    "error",
    "subagent-prompt",
    "stop",
    "subagent-stop",
    "compact-summary",
)


def _forms(context: str, secret: str) -> dict[str, str]:
    text = context.format(s=secret)
    return {
        "plain": text,
        "wire-escaped": text,  # escaped in the spool line's JSON, not in the text
        "json-escaped": json_escaped(text, secret),
        "url-encoded": url_encoded(text, secret),
        "base64": f"echo {base64_wrapped(text)} | base64 -d",
    }


def _wire_escape(raw: bytes, secret: str) -> bytes:
    """raw JSON with the secret's characters written as \\u escapes (valid JSON, same text)."""
    plain = json.dumps(secret)[1:-1].encode()
    escaped = "".join(
        f"\\u{ord(c):04x}" if not c.isalnum() or i % 5 == 0 else c for i, c in enumerate(secret)
    ).encode()
    assert plain in raw
    return raw.replace(plain, escaped)


def _needles() -> list[tuple[str, bytes]]:
    """(kind, bytes that must not appear): each value's fingerprint, and the part of the
    base64 form that encodes the value (not its context)."""
    out = []
    for p in PLANTED:
        out.append((p.kind, fingerprint(p.secret).encode()))
        text = p.context.format(s=p.secret).encode()
        first = text.index(p.secret.encode()) + len(p.secret) // 3
        start = -(-first // 3) * 4  # the first base64 group that encodes only value bytes
        out.append((p.kind + "/base64", base64_wrapped(text.decode())[start : start + 16].encode()))
    return out


def _write_spool(state: Path) -> int:
    spool = state / "spool"
    spool.mkdir(parents=True, mode=0o700)
    lines: list[bytes] = []
    ts = 1_790_000_000_000_000_000
    n = 0
    for field in FIELDS:
        session = f"planted-{field}"
        for p in PLANTED:
            context = "{s}" if field == "file-path" else p.context
            for form, text in _forms(context, p.secret).items():
                if field == "file-path" and (form == "base64" or p.needs_context):
                    continue  # a path holds a token, not a command line or a base64 blob
                n += 1
                event = {
                    "session_id": session,
                    "transcript_path": "/tmp/t.jsonl",
                    "cwd": "/home/dev/app",
                    "permission_mode": "default",
                    **_field_payloads(field, text, n),
                }
                raw = json.dumps(event, separators=(",", ":")).encode()
                if form == "wire-escaped":
                    raw = _wire_escape(raw, p.secret)
                lines.append(build_line(raw, ts + n * 1000, 4242))
        n += 1  # a PreCompact per session: the resume state is written for it
        pre = {
            "session_id": session,
            "transcript_path": "/tmp/t.jsonl",
            "cwd": "/home/dev/app",
            "hook_event_name": "PreCompact",
            "trigger": "manual",
            "custom_instructions": "",
        }
        lines.append(build_line(json.dumps(pre).encode(), ts + n * 1000, 4242))
    # Malformed lines: the secret inside a line that is no valid event goes to the quarantine.
    for p in PLANTED:
        for text in _forms(p.context, p.secret).values():
            lines.append(
                b'{"ctxd":1,"ts_ns":5,"pid":1,"event":{"session_id":"planted-bad",'
                b'"prompt":"' + json.dumps(text)[1:-1].encode() + b'"\n'
            )
    (spool / "20260101T00.jsonl").write_bytes(b"".join(lines))
    return len(lines)


def _write_fault_segment(state: Path, name: str) -> int:
    """Every planted value in every form, in prompts of the session the fault breaks on."""
    lines = []
    for i, p in enumerate(PLANTED):
        for j, text in enumerate(_forms(p.context, p.secret).values()):
            event = {
                "session_id": "planted-fault",
                "hook_event_name": "UserPromptSubmit",
                "cwd": "/home/dev/app",
                "prompt": text,
            }
            ts = 1_790_100_000_000_000_000 + int(name[9:11]) * 10**9 + (i * 10 + j) * 1000
            lines.append(build_line(json.dumps(event).encode(), ts, 4343))
    (state / "spool" / name).write_bytes(b"".join(lines))
    return len(lines)


def _quarantined(state: Path, name: str) -> int:
    return int(query(state, "SELECT count(*) FROM quarantine WHERE name=?", (name,))[0][0])


def _run_with_fault(state: Path, outputs: list[str], tmp: Path) -> None:
    """`ctxd ingest` (its warnings go to the terminal), then the daemon (to its log), each on
    a segment whose every line makes the faulty code raise with the line's secret."""
    env = hook_env(state, PYTHONPATH=f"{FAULT}{os.pathsep}{REPO}")
    ctxd = [sys.executable, "-m", "summarizer.cli.app"]
    n = _write_fault_segment(state, FAULT_CLI)
    r = subprocess.run(
        [*ctxd, "ingest"], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    outputs.append(f"$ ctxd ingest (with the fault)\n{r.stdout}\n{r.stderr}")
    assert _quarantined(state, FAULT_CLI) == n, r.stderr[-2000:]
    _write_fault_segment(state, FAULT_DAEMON)
    out = tmp / "daemon.out"  # outside the state dir: searched as an output
    with out.open("wb") as f:
        daemon = subprocess.Popen([*ctxd, "run"], env=env, stdout=f, stderr=f)
        try:
            poll(lambda: _quarantined(state, FAULT_DAEMON) == n, timeout=300)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=120)
    outputs.append(f"$ ctxd run (with the fault)\n{out.read_text()}")


@pytest.fixture(scope="module")
def planted_state(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    tmp = tmp_path_factory.mktemp("planted")
    state = tmp / ".ctxd"
    _write_spool(state)
    outputs: list[str] = []

    def cli(*args: str) -> None:
        r = run_cli(*args, state_dir=state, timeout=600)
        outputs.append(f"$ ctxd {' '.join(args)}\n{r.stdout}\n{r.stderr}")

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
        start = {
            "session_id": session,
            "transcript_path": "/tmp/t.jsonl",
            "cwd": "/home/dev/app",
            "hook_event_name": "SessionStart",
            "source": "compact",
        }
        r = run_hook(json.dumps(start).encode(), hook_env(state))
        outputs.append(f"$ SessionStart {session}\n{r.stdout.decode()}\n{r.stderr.decode()}")
    for agent in ("deployer-100", "general-purpose"):
        cli("read", "--agent-id", agent, "--lines", "1000")
    for fmt in ("json", "markdown"):
        cli("inject", "--format", fmt)
    cli("sessions")
    cli("sessions", "--json")
    cli("status")
    cli("doctor")
    return state, outputs


def _leaks(blob: bytes) -> Counter[str]:
    return Counter(kind for kind, needle in _needles() if needle in blob)


def test_at_least_60_kinds_planted() -> None:
    assert len({p.kind for p in PLANTED}) >= 60
    fingerprints = [fingerprint(p.secret) for p in PLANTED]
    assert len(set(fingerprints)) == len(fingerprints)


def test_nothing_leaks_outside_the_spool(planted_state: tuple[Path, list[str]]) -> None:
    state, _ = planted_state
    spool_blob = b"".join(p.read_bytes() for p in (state / "spool").iterdir())
    # The check can fail: every needle is in the spool, which keeps raw payloads by design.
    assert not set(k for k, _ in _needles()) - set(_leaks(spool_blob))
    found: dict[str, list[str]] = {}
    files = [p for p in state.rglob("*") if p.is_file() and "spool" not in p.parts]
    assert any(p.name == "index.db" for p in files)
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
    assert "quarantined" in outputs[0]
    entries = int(re.search(r"(\d+) entries", outputs[0]).group(1))  # type: ignore[union-attr]
    assert entries >= len(PLANTED) * len(FORMS) * len(FIELDS) * 0.9, outputs[0]


def test_nothing_leaks_in_any_output(planted_state: tuple[Path, list[str]]) -> None:
    _, outputs = planted_state
    text = "\n".join(outputs)
    assert "[REDACTED:" in text  # the outputs do show the events, redacted
    starts = [o for o in outputs if o.startswith("$ SessionStart")]
    assert sum("additionalContext" in o for o in starts) >= 3  # the hook output is exercised
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
    planted = sum(1 for _ in PLANTED) * len(FORMS) * len(FIELDS)
    print(
        f"\nplanted: {len(PLANTED)} kinds x {len(FORMS)} forms x {len(FIELDS)} fields = "
        f"{planted} planted secrets (searched by the tests above); corpus false positives: "
        f"{sum(kinds.values())} redactions in {len(strings)} distinct strings {dict(kinds)}"
    )
    assert sum(kinds.values()) <= FP_LIMIT
