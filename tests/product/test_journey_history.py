"""Old history, installed: `ctxd import` of real transcripts, then the commands that read them.

The corpus transcripts (Claude Code 1.0.57 to 2.1.119) are imported into a new project with
the installed wheel; `sessions`, `read`, `resume`, `inject` and `search` then answer from them.
A session's latest request is always one of its user's own prompts, never a subagent's
instruction (1.0.x transcripts keep subagent lines inline, marked `isSidechain`).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import CORPUS
from installed import Installed

TRANSCRIPTS = CORPUS / "transcripts"


def _words(text: str) -> str:
    return " ".join(re.sub(r"\s+", " ", text).split())[:60]


def _user_prompts(files: list[Path]) -> dict[str, set[str]]:
    """Per session, the start of every prompt the user typed in the main conversation."""
    prompts: dict[str, set[str]] = {}
    for path in files:
        for line in path.read_bytes().splitlines():
            try:
                rec: Any = json.loads(line)
            except ValueError:
                continue
            if not isinstance(rec, dict) or rec.get("type") != "user" or rec.get("isSidechain"):
                continue
            content = (rec.get("message") or {}).get("content")
            blocks = [content] if isinstance(content, str) else content or []
            texts = [
                b if isinstance(b, str) else str(b.get("text", ""))
                for b in blocks
                if isinstance(b, str) or b.get("type") == "text"
            ]
            if texts:
                prompts.setdefault(str(rec.get("sessionId")), set()).add(_words(" ".join(texts)))
    return prompts


def test_history_journey(installed: Installed, workdir: Path) -> None:
    if not TRANSCRIPTS.is_dir():
        pytest.skip(f"no corpus transcripts at {TRANSCRIPTS}")
    subprocess.run(["git", "init", "-q"], cwd=workdir, check=True)

    def ctxd(*args: str) -> str:
        done = installed.run("ctxd", *args, cwd=workdir)
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
        assert "internal error" not in done.stderr, done.stderr
        return done.stdout

    ctxd("init")
    imported = ctxd("import", str(TRANSCRIPTS))
    assert re.match(r"imported [1-9]\d* entries", imported), imported
    sessions = json.loads(ctxd("sessions", "--all", "--json"))
    assert len(sessions) >= 10, len(sessions)

    prompts = _user_prompts(sorted(TRANSCRIPTS.rglob("*.jsonl")))
    checked = 0
    for session in sessions:
        sid = session["session_id"]
        read = json.loads(ctxd("read", "--agent-id", "main", "--session", sid, "--lines", "5"))
        assert read["entries"], sid
        resumed = json.loads(ctxd("resume", sid, "--json"))
        assert resumed["session"]["session_id"] == sid
        request = resumed.get("next_action") or ""
        if request and sid in prompts:
            # The hand-back's latest request is a prompt of the user's, never a subagent's.
            assert _words(request) in prompts[sid], (sid, request)
            checked += 1
    assert checked >= 5, checked

    # A damaged line in a session's view (a disk error, a hand edit) is skipped and counted.
    busiest = max(sessions, key=lambda s: s["events"])["session_id"]
    view = workdir / ".ctxd" / "sessions" / busiest / "main.jsonl"
    lines = view.read_bytes().splitlines(keepends=True)
    view.write_bytes(b"".join([*lines[:-2], b'{"seq": 1, "trunc\n', lines[-1]]))
    read = installed.run("ctxd", "read", "--agent-id", "main", "--session", busiest, cwd=workdir)
    assert read.returncode == 0 and json.loads(read.stdout)["skipped_lines"] == 1, read.stderr

    injection = json.loads(ctxd("inject", "--format", "json"))
    assert 0 < injection["tokenCount"] <= 2000, injection
    hits = json.loads(ctxd("search", "landing site", "--json"))
    assert hits and all("landing" in json.dumps(h).lower() for h in hits), hits
