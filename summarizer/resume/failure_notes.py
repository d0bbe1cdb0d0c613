"""A session's failures for its notes: unresolved first, each with its fate, one line each."""

from __future__ import annotations

import msgspec

from indexer import Entry
from summarizer.common.failures import (
    cascade_kind,
    describe_failure,
    failure_line,
    quoted,
    target_of,
)
from summarizer.common.models import Failure
from summarizer.common.plain import clean_line
from summarizer.common.text import command_of, error_summary, mask

__all__ = ["MAX_RESOLVED", "FailureNote", "failure_notes", "note_lines", "note_of", "open_lines"]

MAX_RESOLVED = 5  # resolved failures listed after the open ones (what fixed them helps)
GROUP_MIN = 3  # this many open failures with the same error make one line
GROUP_NAMES = 20  # the calls a grouped line names
_ANY = msgspec.json.Decoder()


class FailureNote(msgspec.Struct, omit_defaults=True):
    """A failure of the session, for its notes (precompact_state.json `open_failures` item)."""

    description: str
    tool: str = ""
    count: int = 1
    last_error: str = ""
    prevention: str = ""
    resolved: bool = False
    target: str = ""  # what the call aimed at (summarizer.common.failures.target_of)
    cascades: int = 0  # parallel calls cancelled because of it
    error_class: str = ""  # the error with numbers and paths masked (for grouping)
    command: str = ""  # what the call ran or aimed at
    session_id: str = ""  # the session it failed in (the latest, for one seen in several)


def failure_notes(session_id: str, rows: list[Failure], entries: list[Entry]) -> list[FailureNote]:
    """The session's distinct failures, every unresolved one first (newest first), then up to
    MAX_RESOLVED resolved ones with what fixed them.

    `rows` are the memory's failures (those of other sessions are left out); `entries` the
    session's latest tool results and failures, newest first, which tell what the memory does
    not know yet (it lags until the next compaction).
    """
    mine = {f.signature: f for f in rows if f.session_id == session_id}
    notes = [note_of(f) for f in mine.values()]
    last_ns = [f.last_ns for f in mine.values()]
    known = {n.target for n in notes if n.target}
    passed_at: dict[str, int] = {}  # target -> the newest passing call (ts_ns)
    own: list[FailureNote] = []
    open_by_key: dict[tuple[str, str], FailureNote] = {}
    last_failure: FailureNote | None = None
    for e in reversed(entries):  # oldest first: a cascade follows the failure it belongs to
        target, command = _target(e)
        if e.event == "tool_result" and not e.error:
            passed_at[target] = max(passed_at.get(target, 0), e.ts_ns)
            for key in [k for k in open_by_key if k[0] == target]:
                fixed = open_by_key.pop(key)
                fixed.resolved, fixed.prevention = True, f"`{command or target}` passed later"
            continue
        kind = cascade_kind(e.error)
        if kind:
            if kind == "cascade" and last_failure is not None:
                last_failure.cascades += 1
            continue
        if target in known:
            continue
        code, line = error_summary(e.error or "error")
        key = (target, (f"exit {code}: " if code else "") + mask(line))
        note = open_by_key.get(key)
        if note is None:
            note = FailureNote(
                clean_line(describe_failure(e.tool_name, command, code, line), 300),
                e.tool_name, 0, _gist(code, line), target=target, error_class=key[1],
                command=command, session_id=session_id,
            )  # fmt: skip
            open_by_key[key] = note
            own.append(note)
        note.count += 1
        last_failure = note
    for note, failed_ns in zip(notes, last_ns, strict=True):
        # The memory lags: a call on the same target that passed since resolves the failure.
        if not note.resolved and note.target and passed_at.get(note.target, 0) > failed_ns:
            note.resolved = True
            note.prevention = note.prevention or "a later call on it passed"
    every = own[::-1] + notes  # the session's latest calls are newer than the memory
    unresolved = [n for n in every if not n.resolved]
    resolved = [n for n in every if n.resolved]
    return unresolved + resolved[:MAX_RESOLVED]


def note_lines(notes: list[FailureNote]) -> tuple[list[str], list[str]]:
    """(unresolved lines, resolved lines): one line per failure; open failures that share one
    error (a hook that blocks every call) are one line naming each call."""
    done = [
        failure_line(n.description, n.count, n.cascades, True, n.prevention)
        for n in notes
        if n.resolved
    ]
    return [line for line, _ in open_lines(notes)], done


def open_lines(notes: list[FailureNote]) -> list[tuple[str, FailureNote]]:
    """The unresolved failures' lines, each with the note it stands for (a shared line: the
    first of its calls)."""
    groups: dict[str, list[FailureNote]] = {}
    for n in notes:
        if not n.resolved:
            groups.setdefault(n.error_class or n.description, []).append(n)
    out: list[tuple[str, FailureNote]] = []
    for members in groups.values():
        if len(members) >= GROUP_MIN and members[0].error_class:
            names = list(dict.fromkeys(f"{m.tool} `{_short(m)}`" for m in members))
            calls = ", ".join(names[:GROUP_NAMES])
            if len(names) > GROUP_NAMES:
                calls += f" and {len(names) - GROUP_NAMES} more"
            error = quoted(members[0].last_error.split(": ", 1)[-1], 120)
            line = f"{len(members)} calls failed with the same error, {error}: {calls}"
            out.append((line, members[0]))
        else:
            out += [(failure_line(m.description, m.count, m.cascades), m) for m in members]
    return out


def note_of(f: Failure) -> FailureNote:
    """The note of a failure the memory holds."""
    return FailureNote(
        clean_line(f.description, 300),
        f.tool,
        f.count,
        clean_line(f.last_error, 240),
        clean_line(f.prevention, 200),
        resolved=f.resolved,
        target=f.target,
        cascades=f.cascades,
        error_class=f.error_class,
        command=clean_line(f.command, 120),
        session_id=f.session_id,
    )


def _target(e: Entry) -> tuple[str, str]:
    """(target key, what the call ran or aimed at) of a tool entry."""
    tool_input: dict[str, object] = {}
    if bytes(e.detail):
        try:
            detail = _ANY.decode(bytes(e.detail))
        except (msgspec.DecodeError, ValueError):
            detail = None
        raw = detail.get("input") if isinstance(detail, dict) else None
        tool_input = raw if isinstance(raw, dict) else {}
    command = command_of(e.tool_name, tool_input, e.cwd, e.description)
    return target_of(e.tool_name, tool_input, e.cwd, command), clean_line(command, 120)


def _gist(code: str, line: str) -> str:
    gist = f"exit {code}: {line}" if code and line else f"exit {code}" if code else line
    return clean_line(gist, 240)


def _short(n: FailureNote) -> str:
    return clean_line(n.command or n.target.split(":", 1)[-1] or n.description, 48)
