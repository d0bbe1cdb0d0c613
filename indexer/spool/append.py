"""Appending to the spool from ctxd's own commands (`ctxd emit`): the hook's own append.

The hook (plugin/ctxd_hook/hook.py) writes every line Claude Code and Codex send; explicit
events written by ctxd itself go through these functions, which are the hook's, copied: the
hook imports only the standard library and its own folder, and tests/ctxd_hook/test_copies.py
checks the two stay identical (one line, one write under flock, I2; no symlink followed, I10).
"""

import fcntl
import os
import time

from indexer.safefs import UnsafeStateDir, open_private_dir

__all__ = ["HOSTS", "UnsafeStateDir", "append_at", "append_event", "build_line", "segment_name"]

_ENVELOPE_VERSION = 1
HOSTS = ("codex",)  # clients a spool line names (`--host codex`); Claude Code's name none


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
