"""On a terminal: colour (unless NO_COLOR) and a progress bar while a catch-up waits or works."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

from indexer.daemon import protocol as daemon_channel
from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up, open_writer, writer_lock
from tests.helpers import REPO, clean_env, payload, poll


class Terminal:
    """`ctxd ARGS` with stdout and stderr on a pseudo-terminal; the screen bytes collect."""

    def __init__(self, *args: str, env: dict[str, str], cwd: Path) -> None:
        master, slave = pty.openpty()
        # A terminal of 24 rows and 100 columns (a new pty has 0 of each).
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
        self.master, self.screen = master, bytearray()
        full_env = {**env, "PYTHONPATH": str(REPO), "TERM": "xterm-256color"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "summarizer.cli.app", *args],
            stdin=subprocess.DEVNULL,
            stdout=slave,
            stderr=slave,
            env=full_env,
            cwd=cwd,
        )
        os.close(slave)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: the child closed the terminal
                return
            if not data:
                return
            self.screen += data

    def wait(self) -> tuple[int, bytes]:
        code = self.proc.wait(timeout=120)
        self._reader.join(timeout=30)
        os.close(self.master)
        return code, bytes(self.screen)


def test_errors_are_red_on_a_terminal_and_plain_with_no_color(tmp_path: Path) -> None:
    code, screen = Terminal("sessions", env=clean_env(), cwd=tmp_path).wait()
    assert code == 1 and b"\x1b[31merror:\x1b[0m no ctxd state in" in screen, screen
    code, screen = Terminal("sessions", env=clean_env(NO_COLOR="1"), cwd=tmp_path).wait()
    assert code == 1 and b"\x1b[" not in screen and b"error: no ctxd state in" in screen, screen


def write_backlog(paths: StatePaths, events: int) -> None:
    """A spool segment as the hook writes it, `events` lines long."""
    paths.root.mkdir(mode=0o700)
    paths.spool.mkdir(mode=0o700)
    name = time.strftime("%Y%m%dT%H", time.gmtime()) + ".jsonl"
    now = time.time_ns()
    with open(paths.spool / name, "wb", opener=lambda p, f: os.open(p, f, 0o600)) as out:
        for i in range(events):
            event = payload(hook_event_name="UserPromptSubmit", prompt=f"prompt number {i}")
            out.write(b'{"ctxd":1,"ts_ns":%d,"pid":4242,"event":%s}\n' % (now + i, event))


def test_a_catch_up_shows_progress_on_a_terminal(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "state")
    write_backlog(paths, 2000)
    env = clean_env(CTXD_HOME=str(paths.root), CTXD_PROGRESS_AFTER_S="0")
    # Hold the index as a daemon would, so the command waits on a backlog that does not move
    # until the bar is on screen; then index it here, as the daemon would.
    with writer_lock(paths):
        listener = daemon_channel.listen(paths.root)  # what tells a daemon from other holders
        term = Terminal("ingest", env=env, cwd=tmp_path)
        poll(lambda: b"ctxd ingest: catching up the index" in term.screen, timeout=60)
        # Still holding the lock (as the daemon would): index everything.
        writer = open_writer(paths)
        try:
            writer.start()
            while writer.pass_once().lines:
                pass
        finally:
            writer.close()
        code, screen = term.wait()
        daemon_channel.close_listener(paths.root, listener)
    assert code == 0, screen
    assert b"the daemon holds the index; it is caught up" in screen, screen


def test_no_progress_when_piped(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "state")
    write_backlog(paths, 200)
    env = clean_env(CTXD_HOME=str(paths.root), CTXD_PROGRESS_AFTER_S="0", PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-m", "summarizer.cli.app", "sessions", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert len(json.loads(proc.stdout)) == 1


def test_a_rebuild_shows_it_is_working_on_a_terminal(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "state")
    write_backlog(paths, 200)
    catch_up(paths)
    env = clean_env(CTXD_HOME=str(paths.root), CTXD_PROGRESS_AFTER_S="0")
    with writer_lock(paths):  # the rebuild waits for the index while the spinner turns
        term = Terminal("rebuild", env=env, cwd=tmp_path)
        poll(lambda: b"ctxd rebuild: rewriting the views" in term.screen, timeout=60)
    code, screen = term.wait()
    assert code == 0 and b"rebuilt the views: " in screen, screen
