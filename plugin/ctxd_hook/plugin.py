"""The hook as a Claude Code plugin: what follows an append runs in the installed ctxd."""

# As a plugin, Claude Code runs `python3 -I -S ${CLAUDE_PLUGIN_ROOT}/ctxd_hook/run_hook.py` with
# whatever python3 is on PATH, and the plugin's folder holds only the hook's own files
# (plugin/ctxd_hook in the repository). Spooling needs nothing more. What a few
# events need after the append (the notes after a compaction, a subagent's handoff) needs
# ctxd's code and dependencies, which live in the environment of the `ctxd` command: those
# events are handed to that environment's interpreter (found from the command's `#!` line).
# Until the command is installed, the first SessionStart of a project says how to install it.
# Standard library only, like the hook; it never writes outside the project's state dir.

import json
import os
import shutil
import subprocess
import sys

HINT_SHOWN = "install-hint-shown"  # in the state dir: the hint is given once per project
# Where the install command (and pipx, uv) put `ctxd` when PATH does not lead to it (Claude
# Code started from a desktop launcher does not see a shell profile's PATH).
CTXD_VENV = "~/.local/share/ctxd/venv"
_PLACES = (
    f"{CTXD_VENV}/bin/ctxd",
    "~/.local/share/pipx/venvs/ctxd-claude/bin/ctxd",
    "~/.local/pipx/venvs/ctxd-claude/bin/ctxd",
    "~/.local/share/uv/tools/ctxd-claude/bin/ctxd",
)
# Under the hooks' own timeouts (SessionStart 10 s, the others 5 s).
_TIMEOUTS_S = {"SessionStart": 9.0}
_TIMEOUT_S = 4.0
# Given its packages' folder, the installed interpreter starts without site (-S), which costs
# more than the interpreter's own start: the hook loads site itself for the events that need
# third-party packages (answers._importable_summarizer), not for SubagentStart, which waits.
# A ctxd installed before the hook became a package of its own answers through its
# indexer/hook.py, run by its path (what that version installed as the hook).
_RESPOND = (
    "import sys\n"
    "sys.path.extend(sys.argv[2:])\n"
    "try:\n"
    "    from ctxd_hook.hook import respond\n"
    "except ImportError:\n"
    "    import os, runpy, indexer\n"
    "    earlier = os.path.join(os.path.dirname(indexer.__file__), 'hook.py')\n"
    "    respond = runpy.run_path(earlier)['respond']\n"
    "respond(sys.stdin.buffer.read(), sys.argv[1])\n"
)


def running_as_plugin(hook_file: str) -> bool:
    """True if this hook script is the copy inside the plugin Claude Code runs it from."""
    root = os.environ.get("CLAUDE_PLUGIN_ROOT", "")
    if not root:
        return False
    return os.path.abspath(hook_file).startswith(os.path.abspath(root) + os.sep)


def installed_ctxd() -> tuple[str, str]:
    """(the `ctxd` command, its interpreter): the one on PATH, else one in the usual places;
    ("", "") if none is installed."""
    on_path = shutil.which("ctxd")
    for command in [on_path or "", *(os.path.expanduser(p) for p in _PLACES)]:
        python = _interpreter(command) if command else ""
        if python:
            return command, python
    return "", ""


def _interpreter(command: str) -> str:
    """The interpreter a console script of ctxd runs with, or "" if `command` is not one.

    Its `#!` line names it; pip writes `#!/bin/sh` and an `exec` line instead when the path
    is long or has spaces. A `ctxd` without `ctxd-hook` beside it is another program.
    """
    if not os.path.isfile(os.path.join(os.path.dirname(os.path.realpath(command)), "ctxd-hook")):
        return ""
    try:
        with open(command, "rb") as f:
            head = f.read(1024).decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    if not head or not head[0].startswith("#!"):
        return ""
    words = head[0][2:].split()
    python = words[0] if words else ""
    if python == "/bin/sh" and len(head) > 1 and head[1].startswith("'''exec' "):
        rest = head[1][len("'''exec' ") :]
        python = rest[1 : rest.find('"', 1)] if rest.startswith('"') else rest.split(" ")[0]
    return python if os.path.isabs(python) and os.access(python, os.X_OK) else ""


def respond(payload: bytes, base: str, kind: str, spooled_ns: int = 0) -> None:
    """Do what the event needs after its append (hook.answer_kind) in the installed ctxd,
    copying what it prints; without it, the first SessionStart of a project gives the hint.
    `spooled_ns` is the stamp of the event's spool line (0: not spooled)."""
    if kind == "SessionStart":
        ignore_in_git(base)
    _command, python = installed_ctxd()
    if not python:
        text = install_hint(base) if kind == "SessionStart" else ""
    else:
        timeout_s = _TIMEOUTS_S.get(kind, _TIMEOUT_S)
        text = _delegate(python, payload, base, timeout_s, spooled_ns)
    if text:
        sys.stdout.write(text)
        sys.stdout.flush()


def _delegate(python: str, payload: bytes, base: str, timeout_s: float, spooled_ns: int = 0) -> str:
    """Run `ctxd_hook.hook.respond` in the installed ctxd's environment; its output, or ""."""
    packages = _packages_of(python)
    argv = [python, "-I", "-S", "-c", _RESPOND, base, packages] if packages else []
    try:
        done = subprocess.run(
            argv or [python, "-I", "-c", _RESPOND, base],
            env=dict(os.environ, CTXD_SPOOLED_NS=str(spooled_ns)),
            input=payload,
            capture_output=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else ""


_HOOK_FILES = (("ctxd_hook", "hook.py"), ("indexer", "hook.py"))


def _packages_of(python: str) -> str:
    """The site-packages folder of the venv `python` belongs to, when ctxd is installed in it
    (an editable install's packages only site finds); else ""."""
    lib = os.path.join(os.path.dirname(os.path.dirname(python)), "lib")
    try:
        versions = [name for name in os.listdir(lib) if name.startswith("python3")]
    except OSError:
        return ""
    for version in versions:
        packages = os.path.join(lib, version, "site-packages")
        # ctxd_hook/ since the hook has a package of its own, indexer/hook.py before
        if any(os.path.isfile(os.path.join(packages, *p)) for p in _HOOK_FILES):
            return packages
    return ""


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


def install_source(root: str) -> str:
    """Where the `ctxd` command installs from, for the plugin in folder `root`: the checkout
    it lives in, else the repository its marketplace was added from; "" if unknown."""
    if not root:
        return ""
    root = os.path.abspath(root)
    if _is_ctxd_checkout(os.path.dirname(root)):
        return os.path.dirname(root)  # a marketplace added from a folder runs it in place
    # Else a copy in Claude Code's cache, <config>/plugins/cache/<marketplace>/<plugin>/<version>,
    # taken from the clone of the repository that known_marketplaces.json names.
    parts = root.split(os.sep)
    if len(parts) < 6 or parts[-5:-3] != ["plugins", "cache"]:
        return ""
    try:
        with open(os.sep.join([*parts[:-4], "known_marketplaces.json"]), "rb") as f:
            source = json.loads(f.read())[parts[-3]]["source"]
        kind, ref = source["source"], source.get("ref")
        if kind == "directory":
            return str(source["path"])
        if kind == "github":
            url = f"https://github.com/{source['repo']}.git"
        elif kind == "git":
            url = str(source["url"])
        else:  # a marketplace.json fetched by URL names no repository
            return ""
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    return f"git+{url}" + (f"@{ref}" if isinstance(ref, str) and ref else "")


def _is_ctxd_checkout(folder: str) -> bool:
    try:
        with open(os.path.join(folder, "pyproject.toml"), "rb") as f:
            return b'name = "ctxd-claude"' in f.read(4096)
    except OSError:
        return False


def install_command(source: str) -> str:
    """The shell command that installs `ctxd` from `source` with nothing but Python ≥ 3.11
    (a venv of its own, where the plugin finds it even when PATH does not lead there)."""
    return f"python3 -m venv {CTXD_VENV} && {CTXD_VENV}/bin/pip install {_quoted(source)}"


def _quoted(source: str) -> str:
    import shlex

    return shlex.quote(source) if source else "/path/to/your/ctxd/checkout"


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
    source = install_source(os.environ.get("CLAUDE_PLUGIN_ROOT", ""))
    command = install_command(source)
    user = (
        f"ctxd is recording this session's hook events in {base}. To read and search them, and "
        f"to get the notes back after /compact, install the ctxd command: `{command}` (or "
        f"`pipx install {_quoted(source)}`, or `uv tool install {_quoted(source)}`). To run it "
        f"from a shell too: `mkdir -p ~/.local/bin && ln -sf {CTXD_VENV}/bin/ctxd ~/.local/bin/`."
    )
    model = (
        "The ctxd plugin records this session, but its `ctxd` command is not installed, so "
        "nothing can be handed back after a compaction and its search tools are missing. If the "
        f"user asks, it installs with `{command}`."
    )
    return json.dumps(
        {
            "systemMessage": user,
            "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": model},
        }
    )
