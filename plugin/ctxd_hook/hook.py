"""ctxd-hook: append one Claude Code hook payload to the spool and exit 0 (stdlib only, I1/I2)."""

# This module is the hot path: Claude Code runs it for every tool call, and PreToolUse
# serialises against the tool. It therefore imports only os, sys, time and fcntl at module
# level, never parses the payload, and swallows every error. It runs as a top-level module
# of run_hook.py, so that it need not import the `ctxd_hook` package. A few events need more
# after the append (`answer_kind`): that is done by the modules beside it, imported by their
# file names when needed (answers.py, recall.py), or, in the Claude Code plugin, by the
# installed ctxd (plugin.py).

import fcntl
import os
import sys
import time

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import; mypy reads this as typing's
if TYPE_CHECKING:
    from types import ModuleType

_ENVELOPE_VERSION = 1
HOSTS = ("codex",)  # clients a spool line names (`--host codex`); Claude Code's name none
_MAX_ENV_PATH = 4096
# A hook output must not block Claude Code for long: the SessionStart marker check reads
# only this many bytes of stdin before deciding whether to look for the resume context.
_SESSION_START_MARK = b'"hook_event_name":"SessionStart"'
_PRE_COMPACT_MARK = b'"hook_event_name":"PreCompact"'
_SUBAGENT_START_MARK = b'"hook_event_name":"SubagentStart"'
_SUBAGENT_STOP_MARK = b'"hook_event_name":"SubagentStop"'
_AGENT_CALL_MARKS = (b'"tool_name":"Agent"', b'"tool_name":"Task"')
_PRE_TOOL_USE_MARK = b'"hook_event_name":"PreToolUse"'
_AGENT_CALL_FAILED_MARKS = (
    b'"hook_event_name":"PostToolUseFailure"',
    b'"hook_event_name":"PermissionDenied"',
)
# An event that needs more than its append names one of these in its first 4 KiB.
_ANSWERED_WORDS = (b"SessionStart", b"PreCompact", b"Subagent", b"Agent", b"Task", b"PreToolUse",
                   b"PostToolUseFailure")  # fmt: skip
# The tools whose calls recall what the record holds about their file or command.
_RECALL_TOOLS = (b'"tool_name":"Bash"', b'"tool_name":"Edit"', b'"tool_name":"Write"',
                 b'"tool_name":"MultiEdit"', b'"tool_name":"NotebookEdit"')  # fmt: skip
_RECALL_KINDS = ("Recall", "RecallFailure")


# The same rule as indexer/statedir.py (a copy: this script imports only the stdlib, and
# importing that module would add ~0.17 ms to every event; tests/ctxd_hook/test_copies.py
# checks that the two stay identical).
def state_dir(environ: "os._Environ[str] | dict[str, str]", cwd: str) -> str:
    """Resolve the state directory: $CTXD_HOME, else <project>/.ctxd (ARCHITECTURE §4).

    project = $CLAUDE_PROJECT_DIR, else the git root above `cwd`, else `cwd`; but in a git
    repository, the nearest directory from there up to the repository's root that already has
    a `.ctxd`.
    """
    home = environ.get("CTXD_HOME", "")
    if home:
        return home
    project = environ.get("CLAUDE_PROJECT_DIR", "")
    path = project or cwd
    if os.path.lexists(os.path.join(path, ".ctxd")):  # the usual case: one stat
        return os.path.join(path, ".ctxd")
    # Claude Code started in a subdirectory of a repository runs the hooks of the root's
    # settings with $CLAUDE_PROJECT_DIR set to that subdirectory: its events belong to the
    # state directory `ctxd init` made higher up, not to a new one.
    root = _git_root(path)
    while root and path != root:
        path = os.path.dirname(path)
        if os.path.lexists(os.path.join(path, ".ctxd")):
            return os.path.join(path, ".ctxd")
    return os.path.join(project or root or cwd, ".ctxd")


def _git_root(cwd: str) -> str:
    path = cwd
    for _ in range(64):  # bounded: a pathological cwd must not cost more than a few stats
        if os.path.exists(os.path.join(path, ".git")):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return ""
        path = parent
    return ""


def segment_name(ts_ns: int) -> str:
    """The hour segment a line written at `ts_ns` goes to: `<UTC yyyymmddThh>.jsonl`."""
    return time.strftime("%Y%m%dT%H", time.gmtime(ts_ns // 1_000_000_000)) + ".jsonl"


def build_line(payload: bytes, ts_ns: int, pid: int, host: str = "") -> bytes:
    """Wrap a raw payload in the spool envelope; the event stays raw and comes last.

    Raw newlines can only be whitespace between JSON tokens (inside strings they are
    escaped), so replacing them keeps valid JSON valid and keeps one event on one line.
    The event is the last member so the indexer can check that its raw span ends exactly
    at the envelope's closing brace (a payload fragment cannot forge envelope fields).
    `host` (one of HOSTS) goes just before it; Claude Code's lines carry none.
    """
    body = payload.strip().replace(b"\r", b" ").replace(b"\n", b" ")
    head = b'{"ctxd":%d,"ts_ns":%d,"pid":%d,' % (_ENVELOPE_VERSION, ts_ns, pid)
    named = b'"host":"%s",' % host.encode() if host else b""
    return head + named + b'"event":' + body + b"}\n"


# The same walk as indexer/safefs.py, which the daemon and the commands use (a copy: this
# script imports only the stdlib; tests/ctxd_hook/test_copies.py checks the two are identical).
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeStateDir(OSError):
    """The state directory (or its spool) is a symlink, another user's, or writable by others."""


def open_private_dir(name: str, dir_fd: "int | None" = None, create: bool = True) -> int:
    """Open directory `name` (relative to dir_fd if given) without following a symlink,
    creating it 0700 if missing; refuse one owned by another user or writable by others."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise
        try:
            os.mkdir(name, 0o700, dir_fd=dir_fd)
        except FileExistsError:
            pass  # a concurrent hook made it
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except NotADirectoryError:
        raise UnsafeStateDir(f"{name} is a symlink or not a directory") from None
    except OSError as e:
        if e.errno == 40:  # ELOOP: O_NOFOLLOW met a symlink
            raise UnsafeStateDir(f"{name} is a symlink") from None
        raise
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        os.close(fd)
        raise UnsafeStateDir(f"{name} is owned by another user or writable by others")
    return fd


def append_line(spool_dir: str, name: str, line: bytes) -> None:
    """Append `line` to the segment `name` in `spool_dir` (not followed if a symlink)."""
    dir_fd = os.open(spool_dir, _DIR_FLAGS)
    try:
        append_at(dir_fd, name, line)
    finally:
        os.close(dir_fd)


def append_at(dir_fd: int, name: str, line: bytes) -> None:
    """Append `line` to the segment with one write under flock (I2); finish short writes."""
    # O_RDWR, not O_WRONLY: the last byte is read back to detect a torn previous line.
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
    for _ in range(3):
        fd = os.open(name, flags, 0o600, dir_fd=dir_fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            # Retention may have removed the segment between our open and our lock; then
            # this fd points at an unlinked inode and the line would vanish. Reopen.
            st = os.fstat(fd)
            try:
                if os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_ino != st.st_ino:
                    continue
            except FileNotFoundError:
                continue
            data = line
            # A hook killed mid-write leaves a segment that does not end in "\n"; start
            # on a fresh line so the torn fragment stays a line of its own.
            if st.st_size and os.pread(fd, 1, st.st_size - 1) != b"\n":
                data = b"\n" + line
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            return
        finally:
            os.close(fd)  # closing releases the flock


def run(payload: bytes, environ: "os._Environ[str] | dict[str, str]", cwd: str) -> str:
    """Spool one payload; return the spool path written, or "" when there was nothing to do."""
    return append_event(payload, state_dir(environ, cwd))


def append_event(payload: bytes, base: str, ts_ns: int = 0, host: str = "") -> str:
    """Spool one payload (of client `host`, see `build_line`) under the state dir `base`,
    stamped `ts_ns` (now if 0).

    No symlink is followed: the state directory and its spool are opened with O_NOFOLLOW
    and the segment relative to the spool's descriptor; a state directory that is a symlink,
    another user's or writable by others is refused (UnsafeStateDir), the caller exits 0.
    """
    if not payload.strip():
        return ""
    parent = os.path.dirname(os.path.abspath(base))
    if not os.path.isdir(parent):
        os.makedirs(parent, mode=0o700, exist_ok=True)
    base_fd = open_private_dir(base)
    try:
        spool_fd = open_private_dir("spool", base_fd)
    finally:
        os.close(base_fd)
    try:
        ts_ns = ts_ns or time.time_ns()
        name = segment_name(ts_ns)
        append_at(spool_fd, name, build_line(payload, ts_ns, os.getpid(), host))
    finally:
        os.close(spool_fd)
    return os.path.join(base, "spool", name)


def _count_loss(base: str, error: BaseException) -> None:
    # Only when the event was lost: the counters' module is not loaded otherwise.
    try:
        losses = _sibling("losses")
        losses.count_loss(base, losses.reason_of(error))
    except Exception:
        pass


def _read_stdin() -> bytes:
    # Always drain stdin to EOF: exiting early makes Claude Code see EPIPE (hooks ref §7.10).
    try:
        return sys.stdin.buffer.read()
    except Exception:
        return b""


def answer_kind(payload: bytes) -> str:
    """What the hook does after the append: "SessionStart" (print the notes), "PreCompact"
    (start their build), "SubagentStart" (print the handoff), "AgentCall", "AgentCallFailed"
    and "SubagentStop" (the handoff's bookkeeping), "Recall" and "RecallFailure" (the recall
    at the moment of action, recall.py); "" for every other event."""
    head = payload[:4096]
    if not any(word in head for word in _ANSWERED_WORDS):  # tool events: a few scans, no copy
        return ""
    head = head.replace(b" ", b"")
    if _SESSION_START_MARK in head:
        return "SessionStart"
    if _PRE_COMPACT_MARK in head:
        return "PreCompact"
    if _SUBAGENT_START_MARK in head:
        return "SubagentStart"
    if _SUBAGENT_STOP_MARK in head:
        return "SubagentStop"
    if any(m in head for m in _AGENT_CALL_MARKS):
        if _PRE_TOOL_USE_MARK in head:
            return "AgentCall"
        if any(m in head for m in _AGENT_CALL_FAILED_MARKS):
            return "AgentCallFailed"
    if any(m in head for m in _RECALL_TOOLS):
        if _PRE_TOOL_USE_MARK in head:
            return "Recall"  # print what the record holds about the call's file or command
        if _AGENT_CALL_FAILED_MARKS[0] in head:
            return "RecallFailure"  # add the failed call to its session's recall table
    return ""


# The stamp of a PreCompact's spool line, for `respond` run in the installed ctxd's process
# by the plugin (an environment variable: a delegate of an older ctxd simply ignores it).
SPOOLED_NS_VAR = "CTXD_SPOOLED_NS"


def respond(
    payload: bytes, base: str, kind: str = "", spooled_ns: int | None = None, host: str = ""
) -> None:
    """Do here what `answer_kind` says the event of client `host` needs after its append (the
    Claude Code plugin runs this in the installed ctxd's environment). `spooled_ns` is the
    stamp of the event's spool line, 0 if it was not spooled. Never raises."""
    kind = kind or answer_kind(payload)
    if spooled_ns is None:
        try:
            spooled_ns = int(os.environ.get(SPOOLED_NS_VAR) or 0)
        except ValueError:
            spooled_ns = 0
    try:
        _sibling("answers").answer(payload, base, kind, spooled_ns, host)
    except Exception:
        pass


def _sibling(name: str) -> "ModuleType":
    # A module of this folder, imported by its file name, as run_hook.py imports this one
    # (the plugin's copy of this folder is no package on sys.path, the installed one need
    # not load the package's __init__ for it).
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))
    try:
        return __import__(name)
    finally:
        sys.path.pop()


def _as_plugin() -> bool:
    """True when Claude Code runs this script as a plugin's hook (the copy of this folder
    inside ${CLAUDE_PLUGIN_ROOT})."""
    if not os.environ.get("CLAUDE_PLUGIN_ROOT"):
        return False
    return bool(_sibling("plugin").running_as_plugin(__file__))


def main() -> int:
    """Entry point of `ctxd-hook`: never raises, always returns 0."""
    try:
        payload = _read_stdin()
        argv = sys.argv  # `run_hook.py --host codex` is what `ctxd init --host codex` installs
        host = argv[2] if argv[1:2] == ["--host"] and argv[2:] and argv[2] in HOSTS else ""
        environ = os.environ
        try:
            cwd = os.getcwd()
        except OSError:
            cwd = "/"
        base = state_dir(environ, cwd)
        safe = True
        ts_ns = time.time_ns()
        spooled = False
        try:
            spooled = bool(append_event(payload, base, ts_ns, host))
        except UnsafeStateDir as e:
            safe = False  # nothing is read from or written through an unsafe state dir
            _count_loss(base, e)
        except Exception as e:
            # Unwritable, missing or full state directory: fail open, never fail the agent,
            # but count the loss where `ctxd status` and `ctxd doctor` will see it.
            _count_loss(base, e)
        kind = answer_kind(payload) if safe else ""
        spooled_ns = ts_ns if spooled else 0
        if kind in _RECALL_KINDS:  # stdlib only, here, in the plugin's copy too: it is fast
            recall = _sibling("recall")
            (recall.answer if kind == "Recall" else recall.record_failure)(payload, base)
        elif kind and _as_plugin():  # the plugin's copy: ctxd's environment does the rest
            _sibling("plugin").respond(payload, base, kind, spooled_ns)
        elif kind:
            respond(payload, base, kind, spooled_ns, host)
    except BaseException:
        pass
    return 0


if __name__ == "__main__":
    try:
        main()
    finally:
        os._exit(0)
