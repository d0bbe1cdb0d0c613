"""Small shared test helpers: run the real hook and the real CLI as subprocesses, read the spool.

Import them as `from helpers import ...` (pytest puts tests/ on sys.path via tests/conftest.py).
Every helper works on real files and real processes; nothing here mocks ctxd.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

REPO = Path(__file__).resolve().parents[1]
# The real-payload corpus (not redistributable, so not committed): ../shared/corpus next to the
# checkout, or $CTXD_TEST_CORPUS. Locally its tests skip without it; under CI=true the run fails.
CORPUS = Path(os.environ.get("CTXD_TEST_CORPUS") or REPO.parent / "shared" / "corpus")
HOOK = REPO / "plugin" / "ctxd_hook" / "run_hook.py"
# The command Claude Code runs (see summarizer.cli.setup.install): isolated mode, no site-packages.
HOOK_CMD = (sys.executable, "-I", "-S", str(HOOK))
# Variables that would redirect the state directory or the imports of a child process.
_SCRUBBED = (
    "CTXD_HOME",
    "CTXD_SESSION_ID",
    "CLAUDE_PROJECT_DIR",
    "CLAUDECODE",
    "CLAUDE_CODE_SESSION_ID",
    "NO_COLOR",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
)

T = TypeVar("T")


def clean_env(**extra: str) -> dict[str, str]:
    """os.environ without ctxd/Claude/Python path variables, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    env.update(extra)
    return env


def hook_env(state_dir: Path | str, **extra: str) -> dict[str, str]:
    """An environment that points the hook (and the CLI) at `state_dir` via CTXD_HOME."""
    return clean_env(CTXD_HOME=str(state_dir), **extra)


def run_hook(
    payload: bytes,
    env: Mapping[str, str],
    *,
    cwd: Path | str | None = None,
    timeout: float = 30.0,
    **popen_kwargs: Any,
) -> subprocess.CompletedProcess[bytes]:
    """Run the real hook script (`python -I -S plugin/ctxd_hook/run_hook.py`, what `ctxd init` installs) with `payload` on stdin.

    `env` is passed as is (`{}` means no environment at all). Output is captured as bytes.
    """
    return subprocess.run(
        HOOK_CMD,
        input=payload,
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        timeout=timeout,
        check=False,
        **popen_kwargs,
    )


def run_cli(
    *args: str,
    state_dir: Path | str | None = None,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> subprocess.CompletedProcess[str]:
    """Run `ctxd <args>` as `python -m summarizer.cli.app` from this checkout; text output.

    With `state_dir`, CTXD_HOME points at it; `env` (default: a clean copy of os.environ)
    always gets PYTHONPATH set to the repository so the checkout's packages are imported.
    """
    full_env = dict(env) if env is not None else clean_env()
    if state_dir is not None:
        full_env["CTXD_HOME"] = str(state_dir)
    full_env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-m", "summarizer.cli.app", *args],
        env=full_env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def checkout_copy(dest: Path) -> Path:
    """The files of this checkout that a clone would have (tracked and new, nothing ignored),
    copied to `dest`: no .venv, build/ or caches of the developer's tree."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for rel in filter(None, files):
        src, target = REPO / os.fsdecode(rel), dest / os.fsdecode(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():  # git keeps links as links (the plugin's folder is made of them)
            target.symlink_to(os.readlink(src))
        elif src.is_file():
            target.write_bytes(src.read_bytes())
            target.chmod(src.stat().st_mode & 0o777)
    return dest


def poll(predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.02) -> T:
    """Call `predicate` until it returns something truthy; return that, or fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"condition not met within {timeout} s: {predicate!r}")
        time.sleep(interval)


def payload(**fields: Any) -> bytes:
    """A hook payload as Claude Code sends it: compact JSON, common fields first."""
    base: dict[str, Any] = {
        "session_id": "0f6a6c8e-1b2d-4c3e-9f40-5a6b7c8d9e01",
        "transcript_path": "/home/dev/.claude/projects/-home-dev-app/0f6a6c8e.jsonl",
        "cwd": "/home/dev/app",
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
    }
    base.update(fields)
    return json.dumps(base, separators=(",", ":"), ensure_ascii=False).encode()


def spool_files(state_dir: Path) -> list[Path]:
    """The spool segments of a state directory, in name (= time) order."""
    spool = Path(state_dir) / "spool"
    return sorted(spool.glob("*.jsonl")) if spool.is_dir() else []


def spool_lines(state_dir: Path) -> list[bytes]:
    """Every line of every spool segment (without the b"\\n"), in order; a torn tail included."""
    lines: list[bytes] = []
    for path in spool_files(state_dir):
        data = path.read_bytes()
        lines.extend(data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n"))
    return lines


def parse_envelope(line: bytes) -> dict[str, Any]:
    """Parse a spool line; assert it is a complete envelope with the keys in the hook's order."""
    env: dict[str, Any] = json.loads(line)
    assert list(env) == ["ctxd", "ts_ns", "pid", "event"], line[:200]
    assert env["ctxd"] == 1
    assert isinstance(env["ts_ns"], int) and isinstance(env["pid"], int)
    return env


def seconds_to_next_hour() -> float:
    """Seconds until the hook starts a new spool segment (UTC hour boundary)."""
    return 3600 - time.time() % 3600


def avoid_hour_boundary(margin_s: float = 30.0) -> None:
    """Wait past the next UTC hour if it is closer than `margin_s` (segment names change)."""
    poll(lambda: seconds_to_next_hour() >= margin_s, timeout=margin_s + 10, interval=0.1)


def index_db(state_dir: Path) -> sqlite3.Connection:
    """A read-only connection to a state directory's index.db."""
    return sqlite3.connect(f"file:{Path(state_dir) / 'index.db'}?mode=ro", uri=True)


def query(state_dir: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run one read-only query against the index and return all rows."""
    conn = index_db(state_dir)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def import_transcripts(state_dir: Path, files: list[Path]) -> Any:
    """Import transcript files into a state directory's index as `ctxd import` does, holding
    the writer lock; return the summed ImportStats."""
    from indexer.paths import StatePaths
    from indexer.writer.catch_up import open_writer, writer_lock
    from indexer.writer.importer import ImportStats, TranscriptImporter

    paths = StatePaths(state_dir)
    with writer_lock(paths):
        writer = open_writer(paths)
        try:
            writer.start()
            importer = TranscriptImporter(writer)
            total = ImportStats()
            for f in files:
                total.add(importer.import_file(f))
            writer.sort_views()  # what an import does at its end (transcript_ahead.import_files)
            return total
        finally:
            writer.close()
