"""Names of the resume files, their folder lock and the running-summary reader (stdlib)."""

# Below every module that reads or writes resume files (hook, writer, build), so that
# none of them imports another for a constant.

from __future__ import annotations

import os

from indexer import StateDirError, safefs
from summarizer.resume.fastjson import loads

STATE_FILE = "precompact_state.json"
CONTEXT_FILE = "context.md"
CONSUMED_FILE = "consumed-context.md"
LATEST_FILE = "latest.json"
LOCK_FILE = "state.lock"
MAX_CONTEXT_CHARS = 10000  # Claude Code's additionalContext limit (hooks reference §4.3)
STARTUP_MAX_CHARS = 4000  # "a short project memory"
STARTUP_FILE = "startup.md"
# After `/clear` Claude Code starts a new session id; the state the old session wrote at its
# SessionEnd is handed over only if it is this fresh.
CLEAR_HANDOFF_S = 600.0


def lock_folder(folder: str, name: str = LOCK_FILE) -> int:
    """flock a session's resume folder; close the returned fd to release it.

    The claim (rename) and the writers (check, then write) hold it, so a writer that built
    from the same events cannot re-arm a context a SessionStart consumed meanwhile.
    """
    import fcntl

    try:
        # By directory fds from the state dir: a folder that is (or becomes) a symlink is
        # refused, never written through.
        fd = safefs.open_file(
            state_root_of(folder), os.path.join(folder, name), os.O_RDWR | os.O_CREAT
        )
    except StateDirError as e:
        raise OSError(
            f"{folder}: not a plain directory; ctxd never writes through a symlink"
        ) from e
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


def state_root_of(folder: str) -> str:
    """The state directory of a resume folder (`<state dir>/resume/<session>`)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(folder)))


def running_summary_text(path: str) -> str:
    """The text of the summarizer's running-summary.json, tolerant of its exact shape."""
    try:
        with open(path, "rb") as f:
            doc = loads(f.read())
    except (OSError, ValueError):
        return ""
    if isinstance(doc, str):
        return doc
    if isinstance(doc, dict):
        for key in ("summary", "text", "content"):
            value = doc.get(key)
            if isinstance(value, str):
                return value
    return ""
