"""Whether a SessionStart hands ctxd's notes back, and why: one current copy, never silent."""

# Claude Code keeps every SessionStart `additionalContext` in the conversation and re-sends it
# with every later request; a compaction drops what came before it, except what the same
# process injected just before. So the notes go in once per compaction (source "compact"), and
# on "resume" only when the conversation was compacted and holds no ctxd notes since: a
# conversation never compacted is reloaded whole, and one compacted with ctxd's notes still
# holds them. The transcript (`transcript_path`) shows both; ctxd's own log of what it handed
# back (`resume/<session>/starts.jsonl`) stands in when the transcript cannot be read.
# Whether a SessionStart(compact) is a new compaction or the same one again is told by the
# session's own `compaction.json`, which the PreCompact hook writes: every compaction fires
# PreCompact first. The shared spool cannot tell: in a busy project other sessions may write
# megabytes between a PreCompact and its SessionStart.
# Standard library only: this runs inside the SessionStart hook.

from __future__ import annotations

import os
import time

from indexer import StateDirError, safefs
from summarizer.common.nofollow import is_plain_dir, read_nofollow
from summarizer.resume.fastjson import encode_string, loads
from summarizer.resume.files import state_root_of

__all__ = [
    "COMPACTION_FILE",
    "LOCK_FILE",
    "LOG_FILE",
    "NOTES_HEAD",
    "REPEATED_COMPACT",
    "LiveContext",
    "decide",
    "is_repeated_compaction",
    "last_precompact_ns",
    "last_transcript",
    "live_context",
    "live_from_log",
    "log_decision",
    "read_back_to",
    "read_log",
    "record_precompact",
]

LOG_FILE = "starts.jsonl"
LOCK_FILE = "starts.lock"
COMPACTION_FILE = "compaction.json"  # {"precompact_ns": the spool stamp of the last PreCompact}
# Logged for a SessionStart(compact) with no event since the last one: not a new compaction.
REPEATED_COMPACT = "this compaction's notes were handed back already (no event since)"
NOTES_HEAD = "ctxd notes for session"  # every session note starts with it (resume_context)
_BOUNDARY = b'"subtype":"compact_boundary"'
_NOTES = b'"type":"hook_additional_context","content":["' + NOTES_HEAD.encode()
_BLOCK = 1 << 20
_MAX_LOG_BYTES = 1 << 20  # the log is read from its end; older decisions do not matter


class LiveContext:
    """What the live conversation holds: was it ever compacted, and are ctxd's notes in it
    since the last compaction."""

    def __init__(self, compacted: bool, notes_since: bool, source: str) -> None:
        self.compacted = compacted
        self.notes_since = notes_since
        self.source = source  # "transcript" or "ctxd's log"


def live_context(transcript_path: object) -> LiveContext | None:
    """Read the transcript backwards to its last compaction boundary; None if unreadable."""
    return read_back_to(transcript_path, _BOUNDARY, _NOTES, "transcript", notes_in_marker=True)


def read_back_to(
    path: object, marker: bytes, notes: bytes, source: str, *, notes_in_marker: bool
) -> LiveContext | None:
    """Read a conversation file (a Claude Code transcript, a Codex rollout) backwards from its
    end to the last line holding `marker` (a compaction): was it compacted, and are ctxd's
    notes (`notes`) in it since, counting the marker's own line when `notes_in_marker`. None
    if the file cannot be read."""
    if not isinstance(path, str) or not path:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        pos = os.fstat(fd).st_size
        tail = b""
        seen = False
        while pos > 0:
            start = max(0, pos - _BLOCK)
            chunk = os.pread(fd, pos - start, start) + tail[:256]
            pos = start
            boundary = chunk.rfind(marker)
            if boundary >= 0:
                if notes_in_marker:
                    since = chunk[boundary:]
                else:  # the marker's line is one record: notes after its end came later
                    line_end = chunk.find(b"\n", boundary)
                    since = chunk[line_end:] if line_end >= 0 else b""
                return LiveContext(True, seen or notes in since, source)
            seen = seen or notes in chunk
            tail = chunk
        return LiveContext(False, seen, source)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_log(folder: str) -> list[dict[str, object]]:
    """The decisions logged for one session, oldest first (the last MB of the log)."""
    if is_plain_dir(folder) is not True or is_plain_dir(os.path.dirname(folder)) is not True:
        return []  # missing, or a symlink in the state dir: never read through it
    try:
        fd = os.open(os.path.join(folder, LOG_FILE), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with open(fd, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - _MAX_LOG_BYTES))
            data = f.read()
    except OSError:
        return []
    out = []
    for line in data.split(b"\n"):
        try:
            record = loads(line)
        except ValueError:
            continue  # the first piece of a cut read, or a torn line
        if isinstance(record, dict):
            out.append(record)
    return out


def last_transcript(folder: str) -> str:
    """The transcript path the session's last logged SessionStart named, or ""."""
    for record in reversed(read_log(folder)):
        path = record.get("transcript")
        if isinstance(path, str) and path:
            return path
    return ""


def live_from_log(records: list[dict[str, object]]) -> LiveContext:
    """The live context as ctxd's own log tells it (each compaction fires SessionStart)."""
    compactions = [
        i
        for i, r in enumerate(records)
        if r.get("source") == "compact" and r.get("reason") != REPEATED_COMPACT
    ]
    if not compactions:
        return LiveContext(False, any(r.get("injected") for r in records), "ctxd's log")
    since = records[compactions[-1] :]
    return LiveContext(True, any(r.get("injected") for r in since), "ctxd's log")


def decide(
    source: str, inject_on: list[str], startup_memory: bool, live: LiveContext | None
) -> tuple[bool, str]:
    """(hand back?, why) for a SessionStart of `source` (pure)."""
    if source == "startup":
        if startup_memory:
            return True, "a new session starts: project memory (open tasks, failures, constraints)"
        return False, "a new session starts and [resume] inject_on_startup is off"
    if source not in inject_on:
        return False, f"source {source!r} is not in [resume] inject_on"
    if source == "compact":
        return True, "the conversation was just compacted: the notes go back once"
    if source == "clear":
        return True, "after /clear the conversation is empty: the ended session's notes go back"
    if live is None:
        return False, "the conversation's transcript cannot be read and ctxd has no log of it"
    if not live.compacted:
        return (
            False,
            f"the resumed conversation was never compacted ({live.source}):"
            " it holds its whole history",
        )
    if live.notes_since:
        return (
            False,
            f"ctxd notes are already in the conversation since its last compaction ({live.source})",
        )
    return True, f"the conversation was compacted and holds no ctxd notes since ({live.source})"


def log_decision(folder: str, source: str, injected: int, reason: str, **extra: str) -> None:
    """Append one decision to `folder/starts.jsonl` (0600, one write; never raises)."""
    try:
        parts = [
            '{"ts_ns":' + str(time.time_ns()),
            '"source":' + encode_string(source),
            '"injected":' + ("true" if injected else "false"),
            '"chars":' + str(injected),
            '"reason":' + encode_string(reason),
        ]
        parts += [encode_string(k) + ":" + encode_string(v) for k, v in extra.items() if v]
        line = (",".join(parts) + "}\n").encode("utf-8", "replace")
        # By directory fds from the state dir: a symlink there is refused, never written through.
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        fd = safefs.open_file(state_root_of(folder), os.path.join(folder, LOG_FILE), flags)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except (OSError, StateDirError):
        pass  # the hook must not fail (I1); `ctxd resume --preview` still explains


def record_precompact(folder: str, ts_ns: int) -> None:
    """Record that the session of resume `folder` starts a compaction: its PreCompact event,
    spooled at `ts_ns` (0600, temp + rename, by directory fds; never raises)."""
    try:
        data = b'{"precompact_ns":%d}\n' % ts_ns
        safefs.write_atomic(state_root_of(folder), os.path.join(folder, COMPACTION_FILE), data)
    except (OSError, StateDirError):
        pass  # the hook must not fail (I1); the spool's tail is then the only witness


def last_precompact_ns(folder: str) -> int:
    """The spool stamp of the session's last PreCompact, 0 if none was recorded."""
    if is_plain_dir(folder) is not True or is_plain_dir(os.path.dirname(folder)) is not True:
        return 0
    try:
        doc = loads(read_nofollow(os.path.join(folder, COMPACTION_FILE)))
    except (OSError, ValueError):
        return 0
    stamp = doc.get("precompact_ns") if isinstance(doc, dict) else None
    return stamp if isinstance(stamp, int) and not isinstance(stamp, bool) else 0


def is_repeated_compaction(folder: str, spool_newest_ns: int) -> bool:
    """A SessionStart(compact) repeated with no new event (a PreCompact) since the last one.

    Every compaction fires PreCompact first, and its hook records it in the session's own
    folder: a PreCompact after the last hand-back is a new compaction, however much other
    sessions wrote to the spool meanwhile. The spool's tail is a second witness only (an
    event of the session seen there after the hand-back also makes it a new one:
    `spool_newest_ns`, the session's newest event in the tail, read once by the caller).
    """
    records = [r for r in read_log(folder) if r.get("reason") != REPEATED_COMPACT]
    last = records[-1] if records else None
    if not last or last.get("source") != "compact" or not last.get("injected"):
        return False
    stamp = last.get("ts_ns")
    if not isinstance(stamp, int) or last_precompact_ns(folder) > stamp:
        return False
    return spool_newest_ns <= stamp
