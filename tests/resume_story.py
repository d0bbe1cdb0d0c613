"""The demo session extended with Task tools and a compaction, for the resume tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from helpers import REPO, clean_env, poll

from summarizer.cli.commands.demo_session import DEMO_SESSION_ID, demo_session

SID = DEMO_SESSION_ID
PROJECT_FILES = (
    "src/reports.py",
    "src/export.py",
    "web/reports.html",
    "tests/test_export_unicode.py",
)
IN_PROGRESS_TASK = "Style the export button on the reports page"


def make_project(root: Path) -> Path:
    """A project directory with the files the story edits (files_to_load keeps existing ones)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / ".git").mkdir(exist_ok=True)
    for name in PROJECT_FILES:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# placeholder\n")
    return root


def _base(project: Path, session_id: str, event: str, **extra: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "session_id": session_id,
        "transcript_path": f"/home/dev/.claude/projects/x/{session_id}.jsonl",
        "cwd": str(project),
        "permission_mode": "acceptEdits",
        "hook_event_name": event,
    }
    payload.update(extra)
    return payload


def task_events(project: Path, session_id: str = SID) -> list[dict[str, Any]]:
    """TaskCreate ×2 (pre and post, response shape of the corpus), TaskUpdate, TaskCompleted."""
    out: list[dict[str, Any]] = []
    subjects = [IN_PROGRESS_TASK, "Document the CSV export in the README"]
    for n, subject in enumerate(subjects, start=1):
        tool_input = {
            "subject": subject,
            "description": f"{subject} (details)",
            "activeForm": subject.replace("Style", "Styling"),
        }
        tid = f"toolu_01Task{n:04d}"
        out.append(
            _base(
                project,
                session_id,
                "PreToolUse",
                tool_name="TaskCreate",
                tool_input=tool_input,
                tool_use_id=tid,
            )
        )
        out.append(
            _base(
                project,
                session_id,
                "PostToolUse",
                tool_name="TaskCreate",
                tool_input=tool_input,
                tool_use_id=tid,
                tool_response={"task": {"id": str(n), "subject": subject}},
            )
        )
        out.append(_base(project, session_id, "TaskCreated", task_id=str(n), task_subject=subject))
    update = {"taskId": "1", "status": "in_progress"}
    out.append(
        _base(
            project,
            session_id,
            "PostToolUse",
            tool_name="TaskUpdate",
            tool_input=update,
            tool_use_id="toolu_01Task0003",
            tool_response={
                "success": True,
                "taskId": "1",
                "updatedFields": ["status"],
                "statusChange": {"from": "pending", "to": "in_progress"},
            },
        )
    )
    return out


def story(project: Path, session_id: str = SID) -> list[dict[str, Any]]:
    """The whole session up to and including PreCompact."""
    events = demo_session(str(project), session_id)
    assert events[-1]["hook_event_name"] == "PreCompact"
    return events[:-1] + task_events(project, session_id) + [events[-1]]


def session_start(project: Path, source: str, session_id: str = SID) -> dict[str, Any]:
    return _base(project, session_id, "SessionStart", source=source, model="claude-sonnet-4-5")


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()


def project_env(project: Path, **extra: str) -> dict[str, str]:
    """The hook's environment inside Claude Code: CLAUDE_PROJECT_DIR names the project."""
    return clean_env(CLAUDE_PROJECT_DIR=str(project), **extra)


class Daemons:
    """Starts `ctxd run` subprocesses and always stops them (use as a fixture finalizer)."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        self.pids: list[int] = []

    def start(self, state_dir: Path) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "summarizer.cli.app", "run", "--state-dir", str(state_dir)],
            env=clean_env(PYTHONPATH=str(REPO)),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.procs.append(proc)
        poll(lambda: (state_dir / "daemon.json").exists() or proc.poll() is not None, 20)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
        return proc

    def adopt(self, pid: int) -> None:
        """Remember a daemon someone else started (autostart) so it is stopped too."""
        self.pids.append(pid)

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stderr:
                proc.stderr.close()
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            try:
                poll(lambda p=pid: not _alive(p), 15)
            except AssertionError:
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
