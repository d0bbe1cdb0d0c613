"""`ctxd compact` and ContextAgent.summarize() without a daemon, while another process holds the
writer lock (the builder the PreCompact hook starts): they wait for it and compact themselves.

They once took any holder of the lock for a daemon, wrote a request for it and waited 30 s for
a compaction that nobody would make, then failed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import REPO, clean_env, hook_env, payload, poll, run_cli, run_hook
from memory_helpers import emit_payload, spool

from indexer.index import store
from indexer.paths import StatePaths

# A child that takes daemon.lock as the builder does, and keeps it until its stdin closes.
_HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""
_SUMMARIZE = """
import json, sys
from summarizer import ContextAgent
print(json.dumps(ContextAgent(state_dir=sys.argv[1]).summarize()))
"""
_CLIENTS = {
    "ctxd compact": [sys.executable, "-m", "summarizer.cli.app", "compact", "--state-dir"],
    "ContextAgent.summarize": [sys.executable, "-c", _SUMMARIZE],
}


@pytest.fixture
def paths(tmp_path: Path) -> StatePaths:
    p = StatePaths(tmp_path / "state")
    p.ensure()
    # Long enough that a client asking a daemon that is not there fails clearly, not at once.
    p.config.write_text("[summarizer]\nrequest_timeout_s = 20\n")
    spool(
        p.root,
        [
            emit_payload({"kind": "decision", "decision": "Use SQLite in WAL mode"}),
            emit_payload({"kind": "failure", "description": "Deploy broke", "prevention": "Pin"}),
        ],
    )
    return p


@pytest.fixture
def builder(paths: StatePaths) -> Iterator[subprocess.Popen[str]]:
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(paths.lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdout is not None and child.stdout.readline() == "held\n"
        yield child
        if child.stdin is not None and not child.stdin.closed:
            child.stdin.close()
        child.wait(timeout=30)


def _waiting(pid: int, paths: StatePaths) -> bool:
    """The client is waiting on the holder: it has the lock file open (trying to take it), or
    it has asked a daemon (the request file of the code before this change)."""
    if (paths.root / "compact.request").exists():
        return True
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return True  # it has exited: nothing more to wait for
    for fd in fds:
        try:
            if os.readlink(fd) == str(paths.lock):
                return True
        except OSError:
            continue
    return False


@pytest.mark.parametrize("client", sorted(_CLIENTS))
def test_a_lock_holder_that_is_no_daemon_is_waited_for_and_the_client_compacts_itself(
    paths: StatePaths, builder: subprocess.Popen[str], client: str
) -> None:
    with subprocess.Popen(
        [*_CLIENTS[client], str(paths.root)],
        cwd=REPO,
        env=clean_env(PYTHONPATH=str(REPO)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        poll(lambda: _waiting(proc.pid, paths), timeout=60)
        assert builder.stdin is not None
        builder.stdin.close()  # the builder is done and lets go of the lock
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    if client == "ctxd compact":
        assert out.startswith("compacted 2 new entries; memory at entry 2: +1 decisions"), out
    else:
        assert json.loads(out) == {"success": True, "newDecisions": 1, "newFailures": 1}, err
    assert not (paths.root / "compact.request").exists()
    conn = store.connect(paths.index_db, readonly=True)
    try:
        assert store.get_meta(conn, "mem.published") == "2"
    finally:
        conn.close()


def test_compact_right_after_a_pre_compact_with_no_daemon(tmp_path: Path) -> None:
    # What a user does: Claude Code's hooks record a session and its PreCompact (which starts
    # the detached notes builder, as no daemon runs), then `ctxd compact`.
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "config.toml").write_text("[summarizer]\nrequest_timeout_s = 20\n")
    env = hook_env(state)
    for n in range(20):
        fields = {"hook_event_name": "UserPromptSubmit", "prompt": f"step {n}"}
        assert run_hook(payload(**fields), env).returncode == 0
    pre = payload(hook_event_name="PreCompact", trigger="manual", custom_instructions="")
    assert run_hook(pre, env).returncode == 0
    done = run_cli("compact", state_dir=state)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("compacted 21 new entries; memory at entry 21"), done.stdout
    # The builder's notes are there too, once it has finished.
    resume = state / "resume" / "0f6a6c8e-1b2d-4c3e-9f40-5a6b7c8d9e01" / "precompact_state.json"
    poll(resume.exists, timeout=60)
