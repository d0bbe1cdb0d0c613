"""SIGKILL every command that writes (rebuild, compact, retention, view catch-up, the
SessionStart build, init) at random moments.

After each kill, the next command (`ctxd ingest`, or the killed command run again) must leave
the index as an uninterrupted run would and every view byte-identical to a clean rebuild of
that index, made from scratch in a copy of the state directory. After a killed `ctxd init`,
the next `ctxd init` leaves the same files as an uninterrupted one.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import REPO, hook_env
from test_crash import BASE_TS_NS, append, generate

from indexer.index import store
from indexer.paths import StatePaths
from indexer.views import rebuild as view_rebuild
from indexer.views import update as views

_RETENTION = """
import sys
from pathlib import Path
from indexer.paths import StatePaths
from indexer.writer.catch_up import open_writer, writer_lock
from summarizer.daemon.retention import prune_index
paths = StatePaths(Path(sys.argv[1]))
with writer_lock(paths, wait_s=10):
    w = open_writer(paths)
    prune_index(w.conn, paths, float(sys.argv[2]), float(sys.argv[3]))
"""
# Events span three hours from BASE_TS_NS: keeping one hour at "now" = +2.5 h deletes the
# first 1.5 hours, about half of them.
_RETENTION_ARGS = [str(1 / 24), str(BASE_TS_NS / 1e9 + 2.5 * 3600)]


def _env() -> dict[str, str]:
    env = hook_env("/nonexistent")  # --state-dir overrides CTXD_HOME
    env["PYTHONPATH"] = str(REPO)
    return env


def _command(what: str, state: Path) -> list[str]:
    if what == "retention":
        return [sys.executable, "-c", _RETENTION, str(state), *_RETENTION_ARGS]
    args = ["read", "--agent-id", "main"] if what == "read" else [what]
    return [sys.executable, "-m", "summarizer.cli.app", *args, "--state-dir", str(state)]


def _run(what: str, state: Path) -> float:
    t0 = time.monotonic()
    done = subprocess.run(
        _command(what, state), env=_env(), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return time.monotonic() - t0


def _start_and_kill(what: str, state: Path, delay: float, after: Path | None = None) -> bool:
    """Start `what`, SIGKILL it after `delay` s unless it finished; True if it was killed.

    With `after`, the delay counts from when that path appears (e.g. the rebuild's shadow
    tree), so that the kill lands inside the work however long the interpreter takes to start.
    """
    proc = subprocess.Popen(
        _command(what, state), env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    if after is not None:
        while proc.poll() is None and not after.exists():
            time.sleep(0.0005)
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    assert proc.returncode in (0, -signal.SIGKILL), err
    return proc.returncode == -signal.SIGKILL


def view_tree(sessions: Path) -> dict[str, bytes]:
    """Every view file under a sessions folder, by relative path."""
    return {
        str(p.relative_to(sessions)): p.read_bytes()
        for p in sorted(sessions.rglob("*.jsonl"))
        if not p.name.startswith(".")
    }


def entries_dump(index_db: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(f"file:{index_db}?mode=ro", uri=True)
    try:
        return conn.execute(f"SELECT {store.ENTRY_COLUMNS} FROM entries ORDER BY id").fetchall()
    finally:
        conn.close()


def memory_dump(index_db: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every compaction table, rows sorted (compaction's own output in the index)."""
    conn = sqlite3.connect(f"file:{index_db}?mode=ro", uri=True)
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'mem\\_%' ESCAPE '\\'"
            )
        ]
        return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}
    finally:
        conn.close()


def clean_rebuild(state: Path, scratch: Path) -> dict[str, bytes]:
    """The views a rebuild from scratch makes of `state`'s index (in a copy)."""
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(mode=0o700)
    for name in ("index.db", "index.db-wal"):
        if (state / name).exists():
            shutil.copy2(state / name, scratch / name)
    paths = StatePaths(scratch)
    paths.ensure()
    conn = store.connect(paths.index_db)
    try:
        views.rebuild_all(conn, paths)
    finally:
        conn.close()
    return view_tree(paths.sessions)


def pending_rebuild(state: Path) -> bool:
    conn = sqlite3.connect(f"file:{state / 'index.db'}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT 1 FROM meta WHERE key='views_rebuild'").fetchone() is not None
    finally:
        conn.close()


def _views_behind(state: Path) -> None:
    """The state a daemon killed after committing entries, before writing views, leaves."""
    conn = sqlite3.connect(state / "index.db")
    try:
        conn.execute("UPDATE meta SET value='0' WHERE key='views_upto'")
        conn.commit()
    finally:
        conn.close()
    shutil.rmtree(state / "sessions")


def kill_loop(
    tmp_path: Path,
    what: str,
    recover: str,
    kills: int,
    events: int,
    seed: int,
    prepare: Callable[[Path], None] | None = None,
) -> None:
    """Kill `what` `kills` times at random moments; after each, `recover` and compare."""
    rng = random.Random(seed)
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    paths = StatePaths(pristine)
    paths.ensure()
    append(paths, generate(events, seed).lines)
    _run("ingest", pristine)
    # What an uninterrupted run leaves in the index, and how long it takes.
    expected_state = tmp_path / "expected"
    shutil.copytree(pristine, expected_state)
    if prepare:
        prepare(expected_state)
    duration = _run(what, expected_state)
    expected_entries = entries_dump(expected_state / "index.db")
    expected_memory = memory_dump(expected_state / "index.db")
    state = tmp_path / "state"
    landed = mid = runs = 0
    while landed < kills or (what == "rebuild" and not mid):
        runs += 1
        assert runs < 5 * kills + 20, f"{landed} of {kills} kills ({mid} mid-work) in {runs} runs"
        if runs == 1 or what == "retention" or prepare:
            shutil.rmtree(state, ignore_errors=True)
            shutil.copytree(pristine, state)
            if prepare:
                prepare(state)
        # Every other rebuild is killed while its shadow tree exists: random moments alone
        # land mostly in the interpreter's start on a loaded machine.
        shadow = state / view_rebuild.SHADOW if what == "rebuild" and runs % 2 == 0 else None
        delay = rng.uniform(0.0, 0.01) if shadow else rng.uniform(0.0, duration)
        if not _start_and_kill(what, state, delay, after=shadow):
            continue
        landed += 1
        mid += pending_rebuild(state) if what in ("rebuild", "retention") else 1
        _run(recover, state)
        assert not pending_rebuild(state)
        assert view_tree(state / "sessions") == clean_rebuild(state, tmp_path / "scratch")
        if what == "retention":  # the daemon runs it again at its next interval
            _run(what, state)
            assert view_tree(state / "sessions") == clean_rebuild(state, tmp_path / "scratch")
        assert entries_dump(state / "index.db") == expected_entries
        if what == "compact":
            assert memory_dump(state / "index.db") == expected_memory
    print(f"\n{what}: {landed} kills in {runs} runs, {mid} mid-work")
    if what == "rebuild":
        assert mid >= 1, "no kill landed while the views were being rebuilt"


def test_sigkill_during_rebuild_quick(tmp_path: Path) -> None:
    kill_loop(tmp_path, "rebuild", "ingest", kills=3, events=1500, seed=11)


def test_sigkill_during_rebuild_then_read_quick(tmp_path: Path) -> None:
    # A reader is the next command: it must finish the rebuild, not trust half-rebuilt views.
    kill_loop(tmp_path, "rebuild", "read", kills=2, events=1500, seed=14)


def test_sigkill_during_compact_quick(tmp_path: Path) -> None:
    kill_loop(tmp_path, "compact", "compact", kills=2, events=1500, seed=13)


def test_sigkill_during_view_catch_up_quick(tmp_path: Path) -> None:
    kill_loop(tmp_path, "ingest", "ingest", kills=2, events=1500, seed=12, prepare=_views_behind)


@pytest.mark.full
@pytest.mark.parametrize(
    ("what", "recover", "prepare"),
    [
        ("rebuild", "ingest", None),
        ("compact", "compact", None),
        ("retention", "ingest", None),
        ("ingest", "ingest", _views_behind),
    ],
    ids=["rebuild", "compact", "retention", "view-catch-up"],
)
def test_sigkill_full(
    tmp_path: Path, what: str, recover: str, prepare: Callable[[Path], None] | None
) -> None:
    kill_loop(tmp_path, what, recover, kills=20, events=4000, seed=21, prepare=prepare)


def init_kill_loop(tmp_path: Path, kills: int, seed: int) -> None:
    """Kill `ctxd init` at random moments; the next `ctxd init` leaves a complete install."""
    rng = random.Random(seed)
    env = _env()
    env["HOME"] = str(tmp_path / "home")

    def init(project: Path) -> subprocess.Popen[bytes]:
        cmd = [
            sys.executable,
            "-m",
            "summarizer.cli.app",
            "init",
            "--state-dir",
            str(project / ".ctxd"),
        ]
        return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def init_to_end(project: Path) -> float:
        t0 = time.monotonic()
        proc = init(project)
        _, err = proc.communicate()
        assert proc.returncode == 0, err
        return time.monotonic() - t0

    reference = tmp_path / "reference"
    reference.mkdir()
    duration = init_to_end(reference)
    landed = runs = 0
    while landed < kills:
        runs += 1
        assert runs < 5 * kills + 20, f"{landed} of {kills} kills in {runs} runs"
        project = tmp_path / f"p{runs}"
        project.mkdir()
        proc = init(project)
        try:
            proc.wait(timeout=rng.uniform(0.0, duration))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        if proc.stderr:
            proc.stderr.close()
        if proc.returncode != -signal.SIGKILL:
            shutil.rmtree(project)
            continue
        landed += 1
        init_to_end(project)
        for rel in (".claude/settings.local.json", ".ctxd/config.toml", ".gitignore"):
            assert (project / rel).read_bytes() == (reference / rel).read_bytes(), rel
        assert (project / ".ctxd").stat().st_mode & 0o777 == 0o700
        shutil.rmtree(project)


def test_sigkill_during_init_quick(tmp_path: Path) -> None:
    init_kill_loop(tmp_path, kills=3, seed=31)


@pytest.mark.full
def test_sigkill_during_init_full(tmp_path: Path) -> None:
    init_kill_loop(tmp_path, kills=20, seed=32)


SESSION_START_SESSION = "5e550000-1b2d-4c3e-9f40-5a6b7c8d0000"  # generate()'s first session


def _session_start_hook() -> tuple[list[str], bytes]:
    event = {
        "session_id": SESSION_START_SESSION,
        "transcript_path": "/home/dev/.claude/projects/x.jsonl",
        "cwd": "/home/dev/app",
        "hook_event_name": "SessionStart",
        "source": "compact",
    }
    return [sys.executable, "-I", "-S", str(REPO / "plugin" / "ctxd_hook" / "run_hook.py")], json.dumps(
        event
    ).encode()


def session_start_kill_loop(tmp_path: Path, kills: int, events: int, seed: int) -> None:
    """Kill the SessionStart hook while it builds (its catch-up indexes the whole spool)."""
    rng = random.Random(seed)
    cmd, stdin = _session_start_hook()
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    paths = StatePaths(pristine)
    paths.ensure()
    paths.config.write_text("[daemon]\nautostart = false\n")
    append(paths, generate(events, seed).lines)  # nothing indexed yet: the hook's build does it

    def hook(state: Path, timeout: float | None) -> bool:
        env = hook_env(state)
        proc = subprocess.Popen(
            cmd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdin is not None
        proc.stdin.write(stdin)
        proc.stdin.close()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        assert proc.returncode in (0, -signal.SIGKILL)
        return proc.returncode == -signal.SIGKILL

    def without_session_start(index_db: Path) -> list[tuple[object, ...]]:
        return [r for r in entries_dump(index_db) if r[7] != "SessionStart"]

    expected_state = tmp_path / "expected"
    shutil.copytree(pristine, expected_state)
    t0 = time.monotonic()
    hook(expected_state, None)
    duration = time.monotonic() - t0
    _run("ingest", expected_state)
    expected = [r[1:] for r in without_session_start(expected_state / "index.db")]
    state = tmp_path / "state"
    landed = runs = 0
    while landed < kills:
        runs += 1
        assert runs < 5 * kills + 20, f"{landed} of {kills} kills in {runs} runs"
        shutil.rmtree(state, ignore_errors=True)
        shutil.copytree(pristine, state)
        if not hook(state, rng.uniform(0.0, duration)):
            continue
        landed += 1
        _run("ingest", state)
        # Entry ids may differ (the hook's own event lands before or after the spool's), so
        # compare everything but the id.
        assert [r[1:] for r in without_session_start(state / "index.db")] == expected
        assert view_tree(state / "sessions") == clean_rebuild(state, tmp_path / "scratch")
        for path in (state / "resume").rglob("*.json"):
            json.loads(path.read_bytes())  # atomic writes: never a half-written file


def test_sigkill_during_session_start_build_quick(tmp_path: Path) -> None:
    session_start_kill_loop(tmp_path, kills=2, events=1500, seed=41)


@pytest.mark.full
def test_sigkill_during_session_start_build_full(tmp_path: Path) -> None:
    session_start_kill_loop(tmp_path, kills=20, events=3000, seed=42)
