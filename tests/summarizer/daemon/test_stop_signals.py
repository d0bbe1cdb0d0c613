"""`ctxd stop` during a catch-up always ends the daemon, cleanly, within its timeout.

The SIGTERM handler once logged a line; the log formatter redacts, and redaction waits on the
secret scanner's lock, which the scan it interrupted (in the same thread) already held: the
daemon hung for good, holding the index. The handler now only records the signal and wakes the
loop through a pipe. The first test puts the signal exactly inside that lock; the others stop a
real catch-up again and again, as a user would (50 times under the `full` marker).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, clean_env, payload, poll, query, run_cli

from ctxd_hook.hook import build_line
from indexer.paths import StatePaths

# `ctxd run` with hyperscan's scan wrapped: on the spool line marked STOP-HERE, the process
# sends itself SIGTERM from inside a match callback, i.e. while the scan holds the scanner's
# lock in the main thread, where Python runs signal handlers.
_SIGNAL_IN_SCAN = """
import os, signal, sys, threading
import hyperscan

class _Signalling(hyperscan.Database):
    def scan(self, data, *args, match_event_handler=None, **kwargs):
        handler = match_event_handler
        here = b"STOP-HERE" in bytes(data) and threading.current_thread() is threading.main_thread()
        if handler is None or not here:
            return super().scan(data, *args, match_event_handler=handler, **kwargs)
        sent = []

        def on_match(*a):
            if not sent:
                sent.append(True)
                os.kill(os.getpid(), signal.SIGTERM)  # handled at the next bytecode: here
            return handler(*a)

        return super().scan(data, *args, match_event_handler=on_match, **kwargs)

hyperscan.Database = _Signalling
from summarizer.cli.app import main
sys.exit(main(sys.argv[1:]))
"""
SESSION = "0f6a6c8e-1b2d-4c3e-9f40-5a6b7c8d9e01"


def _spool(paths: StatePaths, lines: int, marked: int = -1) -> None:
    """A backlog of prompts; a long one every 4th (a slower batch), STOP-HERE on `marked`."""
    body = []
    for n in range(lines):
        text = f"prompt {n}: " + ("token Zm9vYmFyYmF6cXV4MDAwMDAwMDFhYmNk " * (40 if n % 4 else 1))
        if n == marked:
            text = "STOP-HERE " + text
        event = payload(hook_event_name="UserPromptSubmit", prompt=text)
        body.append(build_line(event, 1_600_000_000_000_000_000 + n, 7))
    (paths.spool / "20200101T00.jsonl").write_bytes(b"".join(body))


def _entries(paths: StatePaths) -> int:
    try:
        return int(query(paths.root, "SELECT count(*) FROM entries")[0][0])
    except Exception:  # the index does not exist yet
        return 0


def test_sigterm_inside_the_redaction_scan_stops_the_daemon(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    paths.config.write_text("[ingest]\nbatch_lines = 10\n")
    _spool(paths, 60, marked=30)
    script = tmp_path / "signal_in_scan.py"
    script.write_text(_SIGNAL_IN_SCAN)
    proc = subprocess.Popen(
        [sys.executable, str(script), "run", "--state-dir", str(paths.root)],
        cwd=REPO,
        env=clean_env(PYTHONPATH=str(REPO)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        code = proc.wait(timeout=60)  # it hung here for good, holding the index
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stderr is not None
        err = proc.stderr.read().decode()
        proc.stderr.close()
    assert code == 0, err
    log = paths.log.read_text()
    assert "signal 15 received: finishing the current batch" in log
    assert log.rstrip().endswith("daemon stopped")
    assert 0 < _entries(paths) < 60  # it stopped within the pass, its batches committed
    catch_up = run_cli("ingest", state_dir=paths.root)  # nothing lost, nothing twice
    assert catch_up.returncode == 0, catch_up.stderr
    assert _entries(paths) == 60


def _stop_during_catch_ups(tmp_path: Path, rounds: int) -> None:
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    paths.config.write_text("[ingest]\nbatch_lines = 25\n")
    _spool(paths, 2000)
    outcomes = []
    for n in range(rounds):
        before = _entries(paths)
        if before >= 1900:  # nearly all indexed: start over with a fresh backlog
            for p in paths.root.glob("index.db*"):
                p.unlink()
            before = 0
        proc = subprocess.Popen(
            [sys.executable, "-m", "summarizer.cli.app", "run", "--state-dir", str(paths.root)],
            cwd=REPO,
            env=clean_env(PYTHONPATH=str(REPO)),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            poll(lambda b=before: _entries(paths) > b or proc.poll() is not None, timeout=60)
            stopped = run_cli("stop", "--timeout", "20", state_dir=paths.root)
            code = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        outcomes.append((n, code, stopped.returncode, stopped.stdout.strip(), stopped.stderr))
    # Every stop ended the daemon by itself: SIGTERM, never the SIGKILL past the timeout.
    bad = [o for o in outcomes if o[1] != 0 or o[2] != 0 or not o[3].startswith("daemon stopped")]
    assert not bad, json.dumps(bad, indent=1)


def test_stops_during_a_catch_up_end_the_daemon(tmp_path: Path) -> None:
    _stop_during_catch_ups(tmp_path, rounds=5)


@pytest.mark.full
def test_fifty_stops_during_a_catch_up_end_the_daemon(tmp_path: Path) -> None:
    _stop_during_catch_ups(tmp_path, rounds=50)


def test_sigint_during_a_catch_up_stops_it_too(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    _spool(paths, 400)
    proc = subprocess.Popen(
        [sys.executable, "-m", "summarizer.cli.app", "run", "--state-dir", str(paths.root)],
        cwd=REPO,
        env=clean_env(PYTHONPATH=str(REPO)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        poll(lambda: _entries(paths) > 0 or proc.poll() is not None, timeout=60)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "signal 2 received" in paths.log.read_text()
