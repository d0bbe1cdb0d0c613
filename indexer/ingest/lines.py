"""One spool line to a redacted, attributed entry of a batch, or to its quarantine (I6)."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from indexer.config import IngestConfig
from indexer.index.store import StoredEntry
from indexer.ingest.attribution import AgentRegistry
from indexer.models import Entry, HookPayload
from indexer.prepare.line import Prepared, event_of, prepare_line
from indexer.redact.logsafe import failure
from indexer.spool.lines import RawLine
from indexer.spool.tailer import FileState
from indexer.transcripts.prepare import Converted

log = logging.getLogger("ctxd.ingest")
_NO_PAYLOAD = HookPayload()  # a line with neither field the session catalog reads


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
        # For a late quarantine (an entry that cannot be stored): offset -> the spool line it
        # came from, or what makes an imported event's JSON; the event is found again (or
        # made) only for the rare bad entry.
        self.sources: dict[int, Callable[[], bytes]] = {}
        self.lines: dict[int, bytes] = {}
        self.quarantined: list[tuple[int, int, str, bytes]] = []

    def quarantine(self, offset: int, line_no: int, error: str, data: bytes) -> None:
        self.quarantined.append((offset, line_no, error, data))

    def source(self, offset: int) -> bytes:
        """The raw event of the entry at `offset`, for its quarantine."""
        line = self.lines.get(offset)
        if line is not None:
            return event_of(line)
        make = self.sources.get(offset)
        return b"" if make is None else make()

    def quarantine_prepared(self, p: Prepared) -> None:
        """Quarantine a line its prepare step turned down; one that failed with a bug is
        logged where it failed, like `quarantine_failure`."""
        if p.failure:
            log.error("quarantined %s line %d after %s", self.state.name, p.line_no, p.failure)
        self.quarantine(p.offset, p.line_no, p.error, p.data)

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


def guarded_take(batch: Batch, p: Prepared, registry: AgentRegistry, line: bytes) -> None:
    """Add one line prepared elsewhere (the prepare worker) to `batch`, like `guarded_line`."""
    try:
        if take(batch, p, registry):
            batch.lines[p.offset] = line
    except sqlite3.Error:
        raise
    except Exception as e:  # one line must never stop ingest
        batch.quarantine_failure(p.offset, p.line_no, e, line)


def take_converted(
    batch: Batch,
    converted: Converted,
    registry: AgentRegistry,
    line_at: Callable[[int], bytes],
) -> None:
    """Add a prepared batch of transcript lines (the import, in process or from its worker) to
    `batch`: each event attributed like a spool line's, each bad line quarantined, and any
    failure of one event quarantined (I6). `line_at(offset)` is the line read at `offset`."""
    bad = set(converted.bad)
    sources = converted.sources
    for i, p in enumerate(converted.prepared):
        if i in bad:
            batch.quarantine_prepared(p)
            continue
        # A late quarantine keeps the event's JSON, or (made in the worker, which sends no
        # JSON) its transcript line.
        source = (sources[i] if sources else None) or partial(line_at, p.offset)
        try:
            if take(batch, p, registry):
                batch.sources[p.offset] = source
        except sqlite3.Error:
            raise
        except Exception as e:  # one event must never stop the import
            batch.quarantine_failure(p.offset, p.line_no, e, source())


def take(batch: Batch, p: Prepared, registry: AgentRegistry) -> bool:
    """Add a prepared line to `batch`: its entry, attributed, or its quarantine. True if an
    entry was added (the caller keeps its source for a late quarantine)."""
    batch.stats.lines += 1
    if p.error:
        batch.quarantine_prepared(p)
        return False
    if p.entry is None:
        return False  # a blank line
    payload = _NO_PAYLOAD
    if p.session_title or p.reason:
        payload = HookPayload(session_title=p.session_title, reason=p.reason)
    batch.pending.append((registry.attribute(p.entry), payload))
    return True


def _ingest_line(
    batch: Batch, raw: RawLine, line_no: int, cfg: IngestConfig, registry: AgentRegistry
) -> None:
    if take(batch, prepare_line(raw, line_no, batch.state.file_id, cfg), registry):
        batch.lines[raw.offset] = raw.data
