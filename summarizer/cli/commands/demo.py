"""`ctxd demo`: replay the demo session through the real hook and show what ctxd makes of it."""

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

from indexer import CtxdError, StatePaths, catch_up, history, query
from summarizer.cli.commands.demo_session import DEMO_SESSION_ID, demo_session
from summarizer.common.programs import command_argv, hook_launcher

PACKAGES = Path(__file__).resolve().parents[2]  # the folder holding indexer/ and summarizer/
# Every step is a process of its own with a deadline: a step that does not finish has failed,
# and the demo says so and exits non-zero instead of waiting.
STEP_TIMEOUT_S = 120.0
HOOK_TIMEOUT_S = 30.0
STEPS = (
    ["read", "--agent-id", "arch-001", "--format", "text"],
    ["compact"],
    ["inject", "--format", "markdown"],
    ["sessions"],
)
SEARCH = ["search", "test_header_row", "--limit", "3"]
NEXT = """
Next, in a project of yours (or install the Claude Code plugin instead of `ctxd init`):
  cd /path/to/your/project && ctxd init   # record its Claude Code sessions from the next one on
  ctxd doctor                              # check the install, then work in Claude Code as usual"""


class DemoFailed(CtxdError):
    """A step of the demo failed or did not finish."""


def replay(project: Path, payloads: list[dict[str, object]]) -> float:
    """Run the real hook once per payload, as Claude Code would; return the mean ms per call."""
    started = time.perf_counter()
    for payload in payloads:
        _hook(project, json.dumps(payload, ensure_ascii=False).encode())
    return (time.perf_counter() - started) * 1000 / max(1, len(payloads))


def _indexed_entries(paths: StatePaths) -> int:
    conn = history.connect(paths.index_db, readonly=True)
    try:
        return history.count(conn, "entries")
    finally:
        conn.close()


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
    """Replay the demo session into a temporary project and show what ctxd made of it; exit
    non-zero (one line on stderr) at the first step that fails."""
    if getattr(args, "state_dir", None):
        raise CtxdError(
            "the demo always runs in a new temporary project and takes no --state-dir; "
            "use `ctxd demo --keep` to keep that project and look at it afterwards"
        )
    project = Path(tempfile.mkdtemp(prefix="ctxd-demo-"))
    try:
        paths = _demo_project(project)
        payloads = demo_session(str(project))
        print(f"replaying {len(payloads)} hook events into {project} through the real ctxd-hook …")
        print(f"hook: {replay(project, payloads):.1f} ms per event (process start included)\n")
        result = catch_up(paths, wait_s=60.0)
        stats = result.stats
        if result.by_other:  # the notes builder the PreCompact hook starts indexed it first
            recorded = _indexed_entries(paths)
            print(f"indexed {recorded} entries (by the notes builder started on PreCompact)\n")
        else:
            recorded = stats.lines
            print(
                f"indexed {stats.entries} entries from {stats.lines} spool lines "
                f"({stats.duplicates} duplicates, {stats.quarantined} quarantined)\n"
            )
        if recorded != len(payloads):
            raise DemoFailed(f"the hook recorded {recorded} of {len(payloads)} events")
        show_index(paths)
        for argv in STEPS:
            _step(paths, argv)
        _hand_back(paths)
        _step(paths, SEARCH)
        _show_page(paths, project if args.keep else None)
        print(NEXT)
        return 0
    except DemoFailed as e:
        hint = "" if args.keep else "; `ctxd demo --keep` keeps the project to look at"
        raise DemoFailed(f"{e}{hint}") from None
    finally:
        if args.keep:
            print(f"\nkept the demo project at {project}")
        else:
            shutil.rmtree(project, ignore_errors=True)


def _demo_project(project: Path) -> StatePaths:
    """A git project with the session's files and a state dir whose PreCompact builds nothing
    in the background: a detached builder would hold the index's lock the next steps take,
    and write on after the demo removed the project."""
    (project / ".git").mkdir()
    for rel in ("src/reports.py", "src/export.py", "web/reports.html", "tests/test_export.py"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text("# demo file\n")
    paths = StatePaths(project / ".ctxd")
    paths.ensure()
    fd = os.open(paths.config, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("[resume]\nprebuild = false\n")
    return paths


def _step(paths: StatePaths, argv: list[str]) -> str:
    """Run `ctxd <argv>` on the demo's state dir as its own process; print what it prints."""
    print(f"\n$ ctxd {' '.join(argv)}")
    sys.stdout.flush()
    command = command_argv(*argv, "--state-dir", str(paths.root))
    try:
        done = subprocess.run(
            command, env=_env(), capture_output=True, text=True, timeout=STEP_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise DemoFailed(f"`ctxd {argv[0]}` did not finish within {STEP_TIMEOUT_S:.0f} s") from None
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    if done.returncode != 0:
        raise DemoFailed(f"`ctxd {' '.join(argv)}` failed (exit {done.returncode})")
    return done.stdout


def _hand_back(paths: StatePaths) -> None:
    """What the SessionStart hook hands Claude Code after the compaction."""
    print('\n$ echo \'{…"hook_event_name":"SessionStart","source":"compact"…}\' | ctxd-hook')
    payload = {
        "session_id": DEMO_SESSION_ID,
        "transcript_path": f"/home/dev/.claude/projects/{DEMO_SESSION_ID}.jsonl",
        "cwd": str(paths.root.parent),
        "hook_event_name": "SessionStart",
        "source": "compact",
    }
    out = _hook(paths.root.parent, json.dumps(payload).encode())
    try:
        context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    except (ValueError, KeyError, TypeError):
        raise DemoFailed(f"the SessionStart hook handed nothing back: {out[:200]!r}") from None
    print(f"additionalContext ({len(context)} characters):\n")
    print(context)


def _show_page(paths: StatePaths, keep_in: Path | None) -> None:
    """`ctxd view`: the session as one HTML page, kept after the demo's project is removed."""
    folder = keep_in or Path(tempfile.mkdtemp(prefix="ctxd-demo-page-"))
    page = folder / f"ctxd-demo-{DEMO_SESSION_ID[:8]}.html"
    _step(paths, ["view", DEMO_SESSION_ID[:8], "-o", str(page)])
    print("(the session as one page, a lane per agent: open it in a browser)")


def _hook(project: Path, data: bytes) -> bytes:
    """One run of the real hook, as Claude Code starts it in `project`; its stdout."""
    env = {"PATH": os.environ.get("PATH", ""), "CLAUDE_PROJECT_DIR": str(project)}
    try:
        return subprocess.run(
            [sys.executable, "-I", "-S", hook_launcher()],
            input=data,
            env=env,
            cwd=project,
            capture_output=True,
            check=False,
            timeout=HOOK_TIMEOUT_S,
        ).stdout
    except subprocess.TimeoutExpired:
        raise DemoFailed(f"the hook did not finish within {HOOK_TIMEOUT_S:.0f} s") from None


def _env() -> dict[str, str]:
    """This environment for the steps, with nothing that would point them elsewhere."""
    env = {k: v for k, v in os.environ.items() if k not in ("CTXD_HOME", "CLAUDE_PROJECT_DIR")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGES), env.get("PYTHONPATH")]))
    return env
