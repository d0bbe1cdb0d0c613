"""`ctxd demo`: replay the recorded-style demo session through the real hook and show the result."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from indexer import history, query
from indexer.paths import StatePaths
from indexer.writer import catch_up
from summarizer.cli.demo_session import DEMO_SESSION_ID, demo_session

HOOK = Path(__file__).resolve().parents[2] / "indexer" / "run_hook.py"


def replay(project: Path, payloads: list[dict[str, object]]) -> float:
    """Run the real hook once per payload, as Claude Code would; return the mean ms per call."""
    env = {"PATH": os.environ.get("PATH", ""), "CLAUDE_PROJECT_DIR": str(project)}
    started = time.perf_counter()
    for payload in payloads:
        data = json.dumps(payload, ensure_ascii=False).encode()
        subprocess.run(
            [sys.executable, "-I", "-S", str(HOOK)],
            input=data,
            env=env,
            cwd=project,
            stdout=subprocess.DEVNULL,
            check=False,
            timeout=30,
        )
    return (time.perf_counter() - started) * 1000 / max(1, len(payloads))


def show_index(paths: StatePaths) -> None:
    """Print what the index holds: sessions, agents, view files, quarantine."""
    conn = history.connect(paths.index_db, readonly=True)
    try:
        for sid, title, events, status in query.session_table(conn):
            print(f"session {sid}  {events} events, {status}, title: {title!r}")
        for agent_id, agent_type, status, cc in query.agent_table(conn):
            print(f"  agent {agent_id:<48} {agent_type:<16} {status:<10} (Claude Code id {cc})")
        print(f"  quarantined lines: {history.count(conn, 'quarantine')}")
    finally:
        conn.close()
    print("\nview files:")
    for path in sorted(paths.sessions.rglob("*.jsonl")):
        lines = path.read_bytes().count(b"\n")
        print(f"  {path.relative_to(paths.root)}  ({lines} lines)")


def cmd_demo(args: argparse.Namespace) -> int:
    """Replay the demo session into a temporary project and show what ctxd made of it."""
    if getattr(args, "state_dir", None):
        from indexer.errors import CtxdError

        raise CtxdError(
            "the demo always runs in a new temporary project and takes no --state-dir; "
            "use `ctxd demo --keep` to keep that project and look at it afterwards"
        )
    project = Path(tempfile.mkdtemp(prefix="ctxd-demo-"))
    try:
        (project / ".git").mkdir()
        for rel in ("src/reports.py", "src/export.py", "web/reports.html", "tests/test_export.py"):
            (project / rel).parent.mkdir(parents=True, exist_ok=True)
            (project / rel).write_text("# demo file\n")
        paths = StatePaths(project / ".ctxd")
        payloads = demo_session(str(project))
        print(f"replaying {len(payloads)} hook events into {project} through the real ctxd-hook …")
        ms = replay(project, payloads)
        print(f"hook: {ms:.1f} ms per event (process start included)\n")
        result = catch_up(paths, wait_s=60.0)
        s = result.stats
        if not result.by_other:
            print(
                f"indexed {s.entries} entries from {s.lines} spool lines "
                f"({s.duplicates} duplicates, {s.quarantined} quarantined)\n"
            )
        else:  # the notes builder the PreCompact hook started indexed the spool first
            conn = history.connect(paths.index_db, readonly=True)
            try:
                entries = history.count(conn, "entries")
            finally:
                conn.close()
            print(f"indexed {entries} entries (by the notes builder started on PreCompact)\n")
        show_index(paths)
        print("\n$ ctxd read --agent-id arch-001 --format text")
        from summarizer.cli.app import main as ctxd

        ctxd(["read", "--agent-id", "arch-001", "--format", "text", "--state-dir", str(paths.root)])
        _show_extras(paths)
        return 0
    finally:
        if args.keep:
            print(f"\nkept the demo project at {project}")
        else:
            shutil.rmtree(project, ignore_errors=True)


def _show_extras(paths: StatePaths) -> None:
    """Compaction, the orchestrator's injection, the session list, and the resume hand-back."""
    from summarizer.cli.app import main as ctxd

    state = ["--state-dir", str(paths.root)]
    for argv in (["compact"], ["inject", "--format", "markdown"], ["sessions"]):
        print(f"\n$ ctxd {' '.join(argv)}")
        ctxd([*argv, *state])
    print('\n$ echo \'{…"hook_event_name":"SessionStart","source":"compact"…}\' | ctxd-hook')
    project = paths.root.parent
    payload = {
        "session_id": DEMO_SESSION_ID,
        "transcript_path": f"/home/dev/.claude/projects/{DEMO_SESSION_ID}.jsonl",
        "cwd": str(project),
        "hook_event_name": "SessionStart",
        "source": "compact",
    }
    env = {"PATH": os.environ.get("PATH", ""), "CLAUDE_PROJECT_DIR": str(project)}
    out = subprocess.run(
        [sys.executable, "-I", "-S", str(HOOK)],
        input=json.dumps(payload).encode(),
        env=env,
        cwd=project,
        capture_output=True,
        check=False,
        timeout=60,
    ).stdout
    try:
        context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    except (ValueError, KeyError, TypeError):
        print(f"(no resume context: {out[:200]!r})")
        return
    print(f"additionalContext ({len(context)} characters):\n")
    print(context)
