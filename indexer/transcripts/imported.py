"""An imported event: its key (pid 0, transcript time plus a stable hash) and its payload."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

import msgspec

from indexer.models import HookPayload

__all__ = ["IMPORT_PID", "ImportedEvent", "RecordError", "event_ts_ns"]

# Imported events carry pid 0 in their envelope: no hook process ever has pid 0, so an
# imported event can never take the (ts_ns, pid) key of a captured one.
IMPORT_PID = 0
# The sub-millisecond part of an imported event's ts_ns: transcript times have millisecond
# precision, so the rest of the nanoseconds is a hash that keeps each event's key unique
# and the same on every import of the same record (from any file that holds it).
_SUB_MS = 1_000_000
_ENCODE = msgspec.json.Encoder()


class RecordError(ValueError):
    """A transcript line that cannot be read; the message says why."""


class ImportedEvent(msgspec.Struct, frozen=True):
    """One hook event rebuilt from a transcript line: its key's ts_ns (pid IMPORT_PID), its
    payload, and the payload's fields in the order a hook would have sent them."""

    ts_ns: int
    payload: HookPayload
    fields: dict[str, Any]

    def event_json(self) -> bytes:
        """The event as the hook would have spooled it: only a quarantine needs these bytes."""
        return _ENCODE.encode(self.fields)


def event_ts_ns(timestamp: str, key: str) -> int:
    """The ts_ns of an imported event: its transcript time plus a stable hash below 1 ms."""
    try:
        ms = int(datetime.fromisoformat(timestamp).timestamp() * 1000)
    except (ValueError, TypeError) as e:
        raise RecordError(f"bad timestamp {timestamp[:40]!r}") from e
    h = int.from_bytes(
        hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    )
    return ms * _SUB_MS + h % _SUB_MS
