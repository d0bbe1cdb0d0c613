"""Start `ctxd run` (or another module) detached from the hook, never waiting (stdlib only)."""

from __future__ import annotations

import os

# typing costs ~5 ms to import; this constant is the idiom type checkers understand.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from typing import Any

_SPAWNED: list[Any] = []  # keeps Popen objects alive: no ResourceWarning in long-lived callers


def autostart(state_dir: str) -> subprocess.Popen[bytes] | None:
    """Start `ctxd run` detached unless a daemon runs or is starting; never waits.

    A daemon runs when its socket answers; the writer lock is no sign of one (the builder
    started on PreCompact holds it too, and a new daemon waits for that builder). Returns
    the started process, or None when none was started (or starting failed).
    """
    try:
        import fcntl

        from indexer import is_listening, safefs

        if is_listening(state_dir):
            return None
        guard = safefs.open_file(
            state_dir, os.path.join(state_dir, "autostart.lock"), os.O_RDWR | os.O_CREAT
        )
        try:
            try:
                fcntl.flock(guard, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None  # another hook is starting it, or its daemon still runs
            if is_listening(state_dir):
                return None
            # The daemon inherits the guard, so the flock stays held for its whole life:
            # concurrent hooks see it and spawn nothing while it starts or runs.
            return spawn_daemon(state_dir, pass_fds=(guard,))
        finally:
            os.close(guard)
    except Exception:
        return None


def spawn_daemon(state_dir: str, pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
    """Run `ctxd run --state-dir …` in a new session with stdio on /dev/null."""
    from summarizer.common.programs import COMMAND_MODULE

    proc = spawn_detached([COMMAND_MODULE, "run", "--state-dir", state_dir], pass_fds)
    _SPAWNED.append(proc)
    return proc


def spawn_detached(
    module_argv: list[str], pass_fds: tuple[int, ...] = ()
) -> subprocess.Popen[bytes]:
    """Run `python -m <module_argv>` from this checkout in a new session, stdio on /dev/null."""
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    # stdout/stderr on /dev/null: a child holding the hook's pipes makes Claude Code wait
    # for it (hooks reference §7 #7).
    return subprocess.Popen(
        [sys.executable, "-m", *module_argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=root,
        env=env,
        start_new_session=True,
        close_fds=True,
        pass_fds=pass_fds,
    )
