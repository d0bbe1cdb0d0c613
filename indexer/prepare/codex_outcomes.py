"""What a Codex rollout says that its hook payloads do not: exit codes and compaction summaries."""

# Codex's PostToolUse of a shell call carries the command's output but not its exit status,
# and its PostCompact carries no summary. Both are in the session's rollout (the payload's
# `transcript_path`), which Codex has written before it runs the hook: the call's
# `item_completed` record (with `exit_code`) and the `compacted` record (with the summary
# message). Each rollout is scanned once, then only what was appended since; a small table of
# the files read lately is kept per process (the daemon, an ingest, the prepare worker).

from __future__ import annotations

import os
import re
import stat
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime

import msgspec

from indexer.models import HookPayload
from indexer.prepare.codex_payloads import adapt, is_shell_tool

__all__ = [
    "ROLLOUT_NAME",
    "RolloutFacts",
    "adapt_captured",
    "compaction_summary",
    "exit_code",
    "facts_of",
    "summary_of",
]

ROLLOUT_NAME = re.compile(r"rollout-[^/]*\.jsonl")
_MAX_FILES = 16
_CHUNK = 1 << 20
# The boilerplate Codex puts before the summary it hands the next window.
_SUMMARY_LEAD = "use the information in this summary to assist with your own analysis:"
_EXIT = re.compile(r"(?:Process exited with code|Exit code:?) (-?\d+)")


class _Item(msgspec.Struct, frozen=True, gc=False):
    id: str = ""
    type: str = ""
    exit_code: int | None = None


class _Payload(msgspec.Struct, frozen=True, gc=False):
    type: str = ""
    item: msgspec.Raw = msgspec.Raw(b"")
    call_id: str = ""
    output: msgspec.Raw = msgspec.Raw(b"")
    message: msgspec.Raw = msgspec.Raw(b"")


class _Record(msgspec.Struct, frozen=True, gc=False):
    type: str = ""
    timestamp: str = ""
    payload: _Payload | None = None


_RECORD = msgspec.json.Decoder(_Record)
_ITEM = msgspec.json.Decoder(_Item)
_TEXT = msgspec.json.Decoder(str)


@dataclass
class RolloutFacts:
    """Exit codes by call id and compaction summaries by time, read up to `offset`."""

    dev: int = 0
    ino: int = 0
    offset: int = 0
    exit_codes: dict[str, int] = field(default_factory=dict)
    compactions: list[tuple[int, str]] = field(default_factory=list)  # (unix ms, summary)

    def add_line(self, line: bytes) -> None:
        """Take what one rollout line says (lines without either fact cost a substring test)."""
        if b'"exit_code"' not in line and b'"compacted"' not in line and b"_output" not in line:
            return
        try:
            rec = _RECORD.decode(line)
        except (msgspec.DecodeError, ValueError, RecursionError):
            return
        p = rec.payload
        if p is None:
            return
        if rec.type == "compacted":
            message = _text(p.message)
            if message:
                self.compactions.append((_unix_ms(rec.timestamp), summary_of(message)))
        elif p.type == "item_completed" and p.item:
            try:
                item = _ITEM.decode(p.item)
            except (msgspec.DecodeError, ValueError):
                return
            if item.id and item.exit_code is not None:
                self.exit_codes[item.id] = item.exit_code
        elif p.type.endswith("_output") and p.call_id and p.call_id not in self.exit_codes:
            # An older rollout without the exit code on its item: the model's copy says it.
            m = _EXIT.search(_text(p.output)[:400])
            if m:
                self.exit_codes[p.call_id] = int(m[1])


_CACHE: OrderedDict[str, RolloutFacts] = OrderedDict()


def exit_code(transcript_path: str, call_id: str) -> int | None:
    """The exit code the rollout at `transcript_path` records for call `call_id`, if any."""
    facts = facts_of(transcript_path)
    return facts.exit_codes.get(call_id) if facts is not None and call_id else None


def compaction_summary(transcript_path: str, at_ns: int) -> str:
    """The summary of the rollout's newest compaction recorded by `at_ns` (with a second's
    slack: the record's time is Codex's, the event's is the hook's)."""
    facts = facts_of(transcript_path)
    if facts is None:
        return ""
    limit = at_ns // 1_000_000 + 1000
    found = [text for ms, text in facts.compactions if ms <= limit]
    return found[-1] if found else ""


def facts_of(transcript_path: str) -> RolloutFacts | None:
    """The facts of one rollout, brought up to its current end; None if it cannot be read.

    Only a regular file named `rollout-*.jsonl` is read, and a symlink in its last part is
    not followed: the path comes from a hook payload.
    """
    if not transcript_path or not ROLLOUT_NAME.fullmatch(os.path.basename(transcript_path)):
        return None
    try:
        fd = os.open(transcript_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        facts = _CACHE.pop(transcript_path, None)
        same = facts is not None and (facts.dev, facts.ino) == (st.st_dev, st.st_ino)
        if facts is None or not same or facts.offset > st.st_size:
            facts = RolloutFacts(st.st_dev, st.st_ino)  # new, replaced or truncated: from 0
        _read_new(fd, facts, st.st_size)
    except OSError:
        return None
    finally:
        os.close(fd)
    _CACHE[transcript_path] = facts
    while len(_CACHE) > _MAX_FILES:
        _CACHE.popitem(last=False)
    return facts


def _read_new(fd: int, facts: RolloutFacts, size: int) -> None:
    """Feed the complete lines between `facts.offset` and `size` (a partial one waits)."""
    tail = b""
    pos = facts.offset
    while pos < size:
        chunk = os.pread(fd, min(_CHUNK, size - pos), pos)
        if not chunk:
            break
        pos += len(chunk)
        data = tail + chunk
        end = data.rfind(b"\n")
        if end < 0:
            tail = data
            continue
        for line in data[:end].split(b"\n"):
            facts.add_line(line)
        tail = data[end + 1 :]
        facts.offset = pos - len(tail)


def _text(raw: msgspec.Raw) -> str:
    data = bytes(raw)
    if data[:1] != b'"':
        return ""
    try:
        return _TEXT.decode(data)
    except (msgspec.DecodeError, ValueError):
        return ""


def summary_of(message: str) -> str:
    """The summary of a `compacted` record's message, without Codex's lead-in."""
    at = message.find(_SUMMARY_LEAD)
    return message[at + len(_SUMMARY_LEAD) :].strip() if 0 <= at < 1000 else message.strip()


def _unix_ms(timestamp: str) -> int:
    try:
        return int(datetime.fromisoformat(timestamp).timestamp() * 1000)
    except (ValueError, TypeError):
        return 0


def adapt_captured(p: HookPayload, ts_ns: int) -> HookPayload:
    """A payload a Codex hook captured, in Claude Code's shape (codex_payloads.adapt), with
    what only the rollout knows filled in: a shell call's exit code, a compaction's summary."""
    code = None
    if p.hook_event_name == "PostToolUse" and is_shell_tool(p.tool_name):
        code = exit_code(p.transcript_path, p.tool_use_id)
    elif p.hook_event_name == "PostCompact" and not p.compact_summary:
        summary = compaction_summary(p.transcript_path, ts_ns)
        if summary:
            p = msgspec.structs.replace(p, compact_summary=summary)
    return adapt(p, code)
