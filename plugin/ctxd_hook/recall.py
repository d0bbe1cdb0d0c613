"""Recall at the moment of action: PreToolUse hands the model what the record holds on a call.

What the record holds is about the file or command the tool call is about to touch (stdlib
only, no parsing of the payload).

The daemon (after each compaction) and the PostToolUseFailure hook keep a small table per
session, `<state dir>/recall/<session>.tsv`, one item per line:
`<id>\t<file|cmd>\t<key>\t<text>` — a file's path (absolute or relative to the project) or a
command's head words (`npm run build`), and the line to show. On PreToolUse of a file tool or
Bash, this module reads the table (no SQLite, no json, no re), matches the call's `file_path`
or `command`, and prints at most MAX_LINES items the session has not been shown yet
(`<session>.shown` keeps their ids). No table, no match, nothing shown: it prints nothing.

The daemon's rows quote the memory, redacted. The hook cannot redact (the rules are not loaded
in a hook process), so the rows it appends keep no word of the payload outside the spool: their
kind is `file#` or `cmd#`, their key a fingerprint of the path or of the command's head, and
their text names only the tool and the exit code. Until the next compaction the model still
has the failure's output in its context; after it, the daemon's row quotes it.
"""

from __future__ import annotations

import os
import sys

RECALL_DIR = "recall"
MAX_LINES = 3
MAX_TABLE_BYTES = 256 * 1024
HEAD = "ctxd's record about this call (recorded facts, not instructions):"
_FILE_TOOLS = (b'"Edit"', b'"Write"', b'"MultiEdit"', b'"NotebookEdit"')
_ID_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
_NOT_FAILURES = ("sibling tool call", "interrupted", "[request", "user rejected",
                 "the user doesn't")  # fmt: skip
_DIR_FLAGS = _FLAGS | os.O_DIRECTORY


def answer(payload: bytes, base: str) -> None:
    """PreToolUse of a file tool or Bash: print the call's recall, if the record has any."""
    text = payload.decode("utf-8", "replace")
    session = _string(text, "session_id")
    if not session or not set(session.encode()) <= _ID_CHARS or len(session) > 128:
        return
    dir_fd = _open_dir(base)
    if dir_fd < 0:
        return
    try:
        table = _read(dir_fd, session + ".tsv", MAX_TABLE_BYTES)
        if not table:
            return  # the usual case: nothing recorded about this session's calls
        path = _string(text, "file_path") or _string(text, "notebook_path")
        command = "" if path else _string(text, "command")
        if not (path or command):
            return
        shown = set(_read(dir_fd, session + ".shown", 1 << 20).split())
        lines, ids = [], []
        marks = _fingerprints(path, command) if b"#\t" in table else ()
        for row in table.split(b"\n"):
            parts = row.split(b"\t", 3)
            if len(parts) != 4 or parts[0] in shown or parts[0] in ids:
                continue
            kind, key = parts[1], parts[2].decode("utf-8", "replace")
            if kind.endswith(b"#"):
                hit = (kind == b"file#") == bool(path) and key in marks
            else:
                hit = _file_hit(path, key) if kind == b"file" else _command_hit(command, key)
            if hit:
                ids.append(parts[0])
                lines.append("- " + parts[3].decode("utf-8", "replace"))
                if len(lines) == MAX_LINES:
                    break
        if not lines:
            return
        _remember(dir_fd, session + ".shown", ids)
    finally:
        os.close(dir_fd)
    from _json import encode_basestring  # the C encoder json itself uses, without `re`

    context = encode_basestring("\n".join([HEAD, *lines]))
    sys.stdout.write(
        '{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":'
        + context
        + "}}\n"
    )
    sys.stdout.flush()


def is_recall_call(head: bytes) -> bool:
    """Whether a PreToolUse payload's head names a tool recall covers (a file tool or Bash)."""
    return b'"Bash"' in head or any(t in head for t in _FILE_TOOLS)


def record_failure(payload: bytes, base: str) -> None:
    """PostToolUseFailure: add the failed call to its session's table at once, as fingerprints
    (the daemon rewrites the table from the memory at its next compaction)."""
    text = payload.decode("utf-8", "replace")
    session = _string(text, "session_id")
    if not session or not set(session.encode()) <= _ID_CHARS or len(session) > 128:
        return
    error = _string(text, "error")
    first = next((ln.strip() for ln in error.splitlines() if ln.strip()), "")
    if not first or first.lower().startswith(_NOT_FAILURES):
        return  # a cascade or the user's choice: no failure of the call (docs/memory.md)
    path = _string(text, "file_path") or _string(text, "notebook_path")
    tool = _string(text, "tool_name")
    tool = tool if tool.isidentifier() and len(tool) <= 64 else "tool"
    if path:
        a = "An" if tool[0] in "AEIOU" else "A"
        note = f"{a} {tool} of this file failed earlier in this session."
        rid = row_id("failure", "file", _clean(path))
        rows = [(rid, "file#", fingerprint(_clean(path).lstrip("/")), note)]
    else:
        head = _head(_clean(_string(text, "command")))
        if not head:
            return
        code = _exit_code(error)
        said = f" (exit {code})" if code else ""
        rid = row_id("failure", "cmd", head)
        note = f"This {tool} command failed earlier in this session{said}."
        rows = [(rid, "cmd#", fingerprint(head), note)]
        # A command's failure is recalled before it runs again, and before an edit of a file it
        # ran (`python3 app.py`, `pytest tests/a.py::t`): one item, shown once either way.
        note = f"A {tool} command that ran this file failed earlier in this session{said}."
        rows += [(rid, "file#", fingerprint(p.lstrip("/")), note) for p in command_files(head)]
    data = "".join(f"{i}\t{k}\t{v}\t{n}\n" for i, k, v, n in rows).encode()
    dir_fd = _open_dir(base, create=True)
    if dir_fd < 0:
        return
    try:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(session + ".tsv", flags, 0o600, dir_fd=dir_fd)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def fingerprint(key: str) -> str:
    """What the hook keeps of a path or a command head to match the next call (no text)."""
    return row_id("key", key)


# --- private ---------------------------------------------------------------------------


def _string(text: str, name: str) -> str:
    """The first JSON string value of member `name` in the payload's text ("" if none): the
    payload is never parsed whole; `_json.scanstring` decodes the one string."""
    at = text.find('"' + name + '"')
    if at < 0:
        return ""
    i = at + len(name) + 2
    while i < len(text) and text[i] in " \t\r\n:":
        i += 1
    if i >= len(text) or text[i] != '"':
        return ""
    try:
        from _json import scanstring  # the C decoder json itself uses, without `re`

        value, _end = scanstring(text, i + 1, True)
    except (ValueError, ImportError):
        return ""
    return str(value)


def _fingerprints(path: str, command: str) -> set[str]:
    """The call's fingerprints: its path and each tail of it after a `/`, or its command head."""
    if not path:
        return {fingerprint(_head(_clean(command)))}
    parts = _clean(path).lstrip("/").split("/")
    return {fingerprint("/".join(parts[i:])) for i in range(len(parts))}


def _exit_code(error: str) -> str:
    for line in error.splitlines():
        words = line.split()
        if words[:2] == ["Exit", "code"] and len(words) > 2 and words[2].isdigit():
            return words[2][:3]
    return ""


def _head(command: str) -> str:
    """The words a command runs (its last `&&`/`;` step, before any pipe), for matching."""
    step = command.replace("||", "&&").replace(";", "&&").split("&&")[-1].split("|")[0]
    tokens = step.split()
    if len(tokens) > 2 and tokens[0].startswith("python") and tokens[1] == "-m":
        tokens = tokens[2:]  # `python -m pytest` runs pytest
    words = [w for w in tokens if "=" not in w and not w.startswith(("-", "<", ">", "2>"))]
    for launcher in ("sudo", "time", "env", "npx", "bunx", "uv", "run", "poetry"):
        if len(words) > 1 and words[0] == launcher:
            words = words[1:]
    return " ".join(words[:3])


def _clean(text: str) -> str:
    return " ".join(text.replace("\t", " ").split())


def command_files(head: str) -> list[str]:
    """The files a command head names (`pytest tests/a.py::t` -> tests/a.py)."""
    out = []
    for arg in head.split()[1:]:
        path = arg.split("::", 1)[0]
        name = path.rsplit("/", 1)[-1]
        if "." in name.strip(".") and not path.startswith(("-", "http")):
            out.append(path)
    return out


def _file_hit(path: str, key: str) -> bool:
    return bool(path) and (path == key or path.endswith("/" + key.lstrip("/")))


def _command_hit(command: str, key: str) -> bool:
    """Whether the command runs `key`: its words appear in the command's words, in order."""
    words = command.split()
    want = key.split()
    i = 0
    for w in words:
        if i < len(want) and w == want[i]:
            i += 1
    return bool(want) and i == len(want)


def _open_dir(base: str, create: bool = False) -> int:
    try:
        return os.open(os.path.join(base, RECALL_DIR), _DIR_FLAGS)
    except FileNotFoundError:
        if not create:
            return -1
        try:
            os.mkdir(os.path.join(base, RECALL_DIR), 0o700)
            return os.open(os.path.join(base, RECALL_DIR), _DIR_FLAGS)
        except OSError:
            return -1
    except OSError:
        return -1  # a symlink (never followed) or no access


def _read(dir_fd: int, name: str, limit: int) -> bytes:
    try:
        fd = os.open(name, _FLAGS, dir_fd=dir_fd)
    except OSError:
        return b""
    try:
        return os.read(fd, limit)
    finally:
        os.close(fd)


def _remember(dir_fd: int, name: str, ids: list[bytes]) -> None:
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, 0o600, dir_fd=dir_fd)
        try:
            os.write(fd, b"".join(i + b"\n" for i in ids))
        finally:
            os.close(fd)
    except OSError:
        pass


def row_id(*parts: str) -> str:
    """A short stable id of an item: a failure's by its target, a rule or a decision by its
    text (the hook and the table's writer make the same ids, so an item the session was shown
    once is never shown again, whoever wrote it to the table)."""
    h = 0
    for byte in "\x1f".join(parts).encode("utf-8", "replace"):
        h = (h * 1_000_003 + byte) & 0xFFFFFFFFFFFF
    return f"{h:012x}"
