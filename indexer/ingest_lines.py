"""One spool line to a redacted, attributed entry of a batch, or to its quarantine (I6)."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from indexer.attribution import AgentRegistry
from indexer.config import IngestConfig
from indexer.logsafe import failure
from indexer.models import Entry, HookPayload
from indexer.normalize import PayloadError, normalize
from indexer.paths import is_valid_session_id
from indexer.redact import redact_entry
from indexer.spool import LineError, RawLine, decode_envelope, written_envelope
from indexer.store import StoredEntry
from indexer.tailer import FileState
from indexer.transcript_records import IMPORT_PID, ImportedEvent

log = logging.getLogger("ctxd.ingest")
# A stored event's raw JSON, for a late quarantine: a spool line's bytes as read, or (an
# imported event, which has no such bytes) a function that makes them on that rare path.
EventSource = msgspec.Raw | Callable[[], bytes]
_PAYLOAD = msgspec.json.Decoder(HookPayload)


@dataclass
class IngestStats:
    """What one pass did (counts are of this pass only)."""

    lines: int = 0
    entries: int = 0
    duplicates: int = 0
    quarantined: int = 0
    anomalies: int = 0
    bytes: int = 0
    inserted: list[StoredEntry] = field(default_factory=list)

    def add(self, other: IngestStats) -> None:
        self.lines += other.lines
        self.entries += other.entries
        self.duplicates += other.duplicates
        self.quarantined += other.quarantined
        self.anomalies += other.anomalies
        self.bytes += other.bytes
        self.inserted.extend(other.inserted)


class Batch:
    """The entries, quarantined lines and counts of one transaction."""

    def __init__(self, state: FileState) -> None:
        self.state = state
        self.stats = IngestStats()
        self.pending: list[tuple[Entry, HookPayload]] = []
        self.sources: dict[int, EventSource] = {}  # offset -> raw event, for a late quarantine
        self.quarantined: list[tuple[int, int, str, bytes]] = []

    def quarantine(self, offset: int, line_no: int, error: str, data: bytes) -> None:
        self.quarantined.append((offset, line_no, error, data))

    def source(self, offset: int) -> bytes:
        """The raw event of the entry from `offset`, for its late quarantine."""
        source = self.sources.get(offset)
        return b"" if source is None else _source_bytes(source)

    def quarantine_failure(self, offset: int, line_no: int, exc: Exception, data: bytes) -> None:
        """Quarantine a line whose handling raised `exc` (a bug, not bad input). The log says
        where it failed, not the message: it may quote the line, which is not redacted yet."""
        log.error("quarantined %s line %d after %s", self.state.name, line_no, failure(exc))
        self.quarantine(offset, line_no, f"{type(exc).__name__}: {exc}", data)


def guarded_line(
    batch: Batch, raw: RawLine, line_no: int, cfg: IngestConfig, registry: AgentRegistry
) -> None:
    """Ingest one line into `batch`, with any failure of this one line quarantined (I6).

    Only the database failing stops a pass: anything else one line can trigger (a bug in
    normalization, attribution or redaction included) must not block every later line.
    """
    try:
        _ingest_line(batch, raw, line_no, cfg, registry)
    except sqlite3.Error:
        raise
    except Exception as e:  # one line must never stop ingest
        batch.quarantine_failure(raw.offset, line_no, e, raw.data)


def guarded_event(
    batch: Batch,
    offset: int,
    line_no: int,
    event: ImportedEvent,
    cfg: IngestConfig,
    registry: AgentRegistry,
) -> None:
    """Ingest one event built in memory (the transcript import) into `batch`, like a spool
    line's: the same normalization, redaction and attribution of the same payload, and the
    same quarantine of anything that fails (I6)."""
    try:
        batch.stats.lines += 1
        _ingest_payload(
            batch,
            offset,
            line_no,
            event.ts_ns,
            IMPORT_PID,
            event.payload,
            event.event_json,
            cfg,
            registry,
        )
    except sqlite3.Error:
        raise
    except Exception as e:  # one event must never stop the import
        batch.quarantine_failure(offset, line_no, e, event.event_json())


def _ingest_line(
    batch: Batch, raw: RawLine, line_no: int, cfg: IngestConfig, registry: AgentRegistry
) -> None:
    batch.stats.lines += 1
    data = raw.data
    if not data.strip():
        return  # the separator a hook adds after a torn fragment
    if len(data) > cfg.max_line_bytes:
        # A long line that fits in one read chunk (batch_bytes > max_line_bytes) must be
        # judged like one that does not: quarantined whatever the chunk boundaries.
        error = f"line exceeds [ingest] max_line_bytes ({len(data)} bytes)"
        batch.quarantine(raw.offset, line_no, error, data)
        return
    # The hook's own layout is read without decoding the envelope: one decode of the event.
    env = written_envelope(data)
    payload = None
    if env is not None:
        try:
            payload = _PAYLOAD.decode(env.event)
        except (msgspec.DecodeError, ValueError):
            env = None  # the whole decode below says what is wrong with the line
    if env is None:
        try:
            env = decode_envelope(data)
        except LineError as e:
            # A torn fragment (hook killed mid-write) is a line of its own: the next hook
            # starts on a fresh line (I2). Nothing inside a line is salvaged as a record, so
            # a payload cannot forge an envelope.
            batch.quarantine(raw.offset, line_no, str(e), data)
            return
    if payload is None:
        try:
            payload = _PAYLOAD.decode(env.event)
        except (msgspec.DecodeError, ValueError) as e:
            error = _payload_error(e)
            batch.quarantine(raw.offset, line_no, error, bytes(env.event))
            return
    _ingest_payload(
        batch, raw.offset, line_no, env.ts_ns, env.pid, payload, env.event, cfg, registry
    )


def _ingest_payload(
    batch: Batch,
    offset: int,
    line_no: int,
    ts_ns: int,
    pid: int,
    payload: HookPayload,
    source: EventSource,
    cfg: IngestConfig,
    registry: AgentRegistry,
) -> None:
    try:
        entry = normalize(
            payload,
            ts_ns=ts_ns,
            pid=pid,
            file_id=batch.state.file_id,
            offset=offset,
            line_no=line_no,
            max_text_chars=cfg.max_text_chars,
            max_detail_bytes=cfg.max_detail_bytes,
        )
        if not is_valid_session_id(entry.session_id):
            raise PayloadError(f"session_id {entry.session_id[:80]!r} is not a valid id")
        check_utf8(bytes(entry.detail))
    except (msgspec.DecodeError, ValueError) as e:
        batch.quarantine(offset, line_no, _payload_error(e), _source_bytes(source))
        return
    # Redacted before attribution: the agent table keeps the entry's description.
    batch.pending.append((registry.attribute(redact_entry(entry)), payload))
    batch.sources[offset] = source


def _payload_error(e: Exception) -> str:
    if isinstance(e, UnicodeDecodeError):
        return f"bad hook payload: not valid UTF-8 ({e.reason} at byte {e.start})"
    return f"bad hook payload: {e}"


def _source_bytes(source: EventSource) -> bytes:
    """The raw event of a source: the spool's bytes, or an imported event's JSON made now."""
    return bytes(source) if isinstance(source, msgspec.Raw) else source()


def check_utf8(raw: bytes) -> None:
    """Reject invalid UTF-8 in raw JSON that is stored as is (`detail`).

    msgspec validates every string it decodes but not the bytes of a Raw member: invalid UTF-8
    there would be stored and break every later decode of it. Only the stored raw part needs
    the check, which keeps it off the rest of the (often large) line.
    """
    if not raw.isascii():
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise PayloadError(f"event is not valid UTF-8 ({e.reason} at byte {e.start})") from e
