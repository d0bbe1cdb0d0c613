"""The per-session table the PreToolUse hook reads to recall history at the moment of action.

Written with the session's resume state (after each compaction that saw the session, on
PreCompact, SessionEnd, SessionStart): the project's unresolved failures, keyed by the file or
the command head they failed on, and the user's rules and the decisions in force that name a
file. The hook side, its format and its matching are in plugin/ctxd_hook/recall.py; the
failures the session meets meanwhile are appended there by the PostToolUseFailure hook.
"""

from __future__ import annotations

import re

from indexer import (
    StatePaths,
    check_session_id,
    ensure_private_dir,
    iso_utc,
    redact_text,
    write_atomic,
)
from summarizer.common.models import Memory
from summarizer.common.neutralize import neutralize
from summarizer.common.plain import clean_line
from summarizer.resume.failure_notes import FailureNote

__all__ = ["RECALL_DIR", "command_files", "recall_rows", "row_id", "write_recall_table"]

# The table's folder, its ids and the files a command names are the hook's (a copy: the hook
# imports only the standard library and its own folder; tests/ctxd_hook/test_copies.py checks
# that the two agree).
RECALL_DIR = "recall"

MAX_ROWS = 200
# A path-like word of a rule or a decision: a file under a folder, or a name with an extension.
_PATH = re.compile(r"(?<![\w/.-])(?:[\w.@~+-]+/)+[\w.@~+-]+|\b[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4}\b")
_NOT_FILES = frozenset({"e.g", "i.e", "etc.", "vs.", "node.js", "next.js", "vue.js"})


def recall_rows(memory: Memory | None, session: list[FailureNote], now_ns: int) -> list[str]:
    """The table's lines (`id, file|cmd, key, text`, tab-separated): the session's unresolved
    failures, the project's, then the rules and decisions in force that name a file."""
    rows: list[str] = []
    as_of = iso_utc(now_ns)[11:16]
    failures = [(n.target, n.description) for n in session if not n.resolved]
    failures += [(f.target, f.description) for f in (memory.failures if memory else [])
                 if not f.resolved]  # fmt: skip
    for target, description in failures:
        kind, _, key = target.partition(":")
        kind = "cmd" if kind == "bash" else "file" if kind in ("edit", "read") else ""
        if kind and key:
            text = f"{clean_line(description, 300)}; not resolved as of {as_of} UTC"
            rid = row_id("failure", kind, key)
            rows.append(_row(rid, kind, key, text))
            # Before an edit of a file the failed command ran, too (the same item).
            rows += [_row(rid, "file", p, text) for p in (command_files(key) if kind == "cmd"
                                                          else [])]  # fmt: skip
    if memory is None:
        return [r for r in dict.fromkeys(rows) if r][:MAX_ROWS]
    for c in memory.constraints:
        for path in _paths(c.description):
            text = f'The user\'s rule in force: "{clean_line(c.description, 300)}"'
            rows.append(_row(row_id("rule", c.description), "file", path, text))
    for d in memory.decisions:
        for path in _paths(d.decision):
            text = f'A decision in force: "{clean_line(d.decision, 300)}"'
            rows.append(_row(row_id("decision", d.decision), "file", path, text))
    return [r for r in dict.fromkeys(rows) if r][:MAX_ROWS]


def write_recall_table(paths: StatePaths, session_id: str, rows: list[str]) -> None:
    """Write (or, with no rows, remove) the session's table, atomically, 0600 in 0700."""
    folder = paths.root / RECALL_DIR
    name = f"{check_session_id(session_id)}.tsv"
    if not rows:
        try:
            (folder / name).unlink()
        except FileNotFoundError:
            pass
        return
    ensure_private_dir(folder, paths.root)
    write_atomic(folder / name, ("\n".join(rows) + "\n").encode("utf-8"), root=paths.root)


def _row(rid: str, kind: str, key: str, text: str) -> str:
    # Redacted again at this boundary: an index an earlier ctxd wrote holds, as typed, what a
    # rule added since finds (the table is read by the hook, which cannot redact).
    key, text = (
        " ".join(redact_text(key).split()),
        " ".join(neutralize(redact_text(text))[0].split()),
    )
    return f"{rid}\t{kind}\t{key}\t{text}" if key and text else ""


def _paths(text: str) -> list[str]:
    found = [m.group(0).strip(".") for m in _PATH.finditer(text.replace("`", " "))]
    return [p for p in dict.fromkeys(found) if p.lower() not in _NOT_FILES and len(p) > 3]


def command_files(head: str) -> list[str]:
    """The files a command head names (`pytest tests/a.py::t` -> tests/a.py)."""
    out = []
    for arg in head.split()[1:]:
        path = arg.split("::", 1)[0]
        name = path.rsplit("/", 1)[-1]
        if "." in name.strip(".") and not path.startswith(("-", "http")):
            out.append(path)
    return out


def row_id(*parts: str) -> str:
    """A short stable id of an item: a failure's by its target, a rule or a decision by its
    text (the hook and the table's writer make the same ids, so an item the session was shown
    once is never shown again, whoever wrote it to the table)."""
    h = 0
    for byte in "\x1f".join(parts).encode("utf-8", "replace"):
        h = (h * 1_000_003 + byte) & 0xFFFFFFFFFFFF
    return f"{h:012x}"
