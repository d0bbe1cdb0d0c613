"""The hook as a Claude Code plugin: SessionStart and PreCompact run in the installed ctxd."""

# As a plugin, Claude Code runs `python3 -I -S ${CLAUDE_PLUGIN_ROOT}/indexer/run_hook.py` with
# whatever python3 is on PATH. Spooling needs nothing more; the notes handed back after a
# compaction need ctxd's dependencies, which live in the environment of the `ctxd` command
# (pipx, uv tool). So those two events run under that environment's interpreter (found
# from the command's `#!` line), and, until it is installed, the first SessionStart of a
# project says how to install it. Standard library only, like the hook.

import json
import os
import shutil
import subprocess

INSTALL_COMMAND = "pipx install ctxd-claude"
HINT_SHOWN = "install-hint-shown"  # in the state dir: the hint is given once per project
_TIMEOUT_S = 9.0  # under the SessionStart hook's own timeout (10 s)

_SESSION_START = (
    "import sys\n"
    "from summarizer.resume.hook import session_start_output\n"
    "sys.stdout.write(session_start_output(sys.stdin.buffer.read(), sys.argv[1]))\n"
)
_PRE_COMPACT = (
    "import sys\n"
    "from indexer.hook import _prebuild\n"
    "_prebuild(sys.stdin.buffer.read(), sys.argv[1])\n"
)


def running_as_plugin(hook_file: str) -> bool:
    """True if this hook script is the copy inside the plugin Claude Code runs it from."""
    root = os.environ.get("CLAUDE_PLUGIN_ROOT", "")
    if not root:
        return False
    return os.path.abspath(hook_file).startswith(os.path.abspath(root) + os.sep)


def installed_python() -> str:
    """The interpreter of the `ctxd` command on PATH (its `#!` line), or "" if none."""
    command = shutil.which("ctxd")
    if not command:
        return ""
    try:
        with open(command, "rb") as f:
            first = f.readline(512)
    except OSError:
        return ""
    if not first.startswith(b"#!"):
        return ""
    words = first[2:].decode("utf-8", "replace").split()
    python = words[0] if words else ""
    return python if os.path.isabs(python) and os.access(python, os.X_OK) else ""


def session_start(payload: bytes, base: str) -> str:
    """The SessionStart output: from the installed ctxd, else the install hint (once)."""
    ignore_in_git(base)
    python = installed_python()
    if not python:
        return install_hint(base)
    try:
        done = subprocess.run(
            [python, "-I", "-c", _SESSION_START, base],
            input=payload,
            capture_output=True,
            timeout=_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else ""


def pre_compact(payload: bytes, base: str) -> None:
    """Start the notes' build in the installed ctxd (it detaches the builder itself)."""
    python = installed_python()
    if not python:
        return
    try:
        subprocess.run(
            [python, "-I", "-c", _PRE_COMPACT, base],
            input=payload,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        pass


def ignore_in_git(base: str) -> None:
    """Put a `.gitignore` of `*` in the state dir: with the plugin, no `ctxd init` adds
    `.ctxd/` to the project's .gitignore, and captured sessions must not get committed."""
    try:
        fd = os.open(
            os.path.join(base, ".gitignore"),
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
        )
    except OSError:  # already there (or not writable: the spool write said so already)
        return
    try:
        os.write(fd, b"# written by ctxd: nothing in this folder belongs in git\n*\n")
    finally:
        os.close(fd)


def install_hint(base: str) -> str:
    """Hook JSON telling the user (and the model) how to install the `ctxd` command, the first
    time only: "" once it was shown or if it cannot be recorded."""
    try:
        fd = os.open(
            os.path.join(base, HINT_SHOWN),
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
        )
        os.close(fd)
    except OSError:
        return ""
    user = (
        f"ctxd is recording this session's hook events in {base}. To read them, and to get "
        f"the notes back after /compact, install the ctxd command: {INSTALL_COMMAND} "
        "(or: uv tool install ctxd-claude)."
    )
    model = (
        "The ctxd plugin records this session, but its `ctxd` command is not installed, so "
        f"nothing can be handed back after a compaction. If the user asks, it installs with "
        f"`{INSTALL_COMMAND}`."
    )
    return json.dumps(
        {
            "systemMessage": user,
            "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": model},
        }
    )
