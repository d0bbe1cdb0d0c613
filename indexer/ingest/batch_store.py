"""A prepared batch into the index: known events dropped, entries and bad lines stored, catalog."""

from __future__ import annotations

import sqlite3
import time

from indexer.index import store
from indexer.index.catalog import SessionDelta, add_to_session, update_sessions
from indexer.index.store import StoredEntry
from indexer.ingest.attribution import AgentRegistry
from indexer.ingest.lines import Batch
from indexer.models import Entry
from indexer.prepare.line import QUARANTINE_SCAN_BYTES
from indexer.redact.decoded import unescape
from indexer.redact.text import redact_text
from indexer.spool.tailer import FileState
from indexer.transcripts.offsets import drop_known_events

__all__ = ["quarantine_line", "quarantine_raw", "store_batch"]

# A quarantined line keeps enough to diagnose it (the spool keeps the rest while it lasts),
# redacted before it is cut so that no key is cut below what its rule recognises.
_QUARANTINE_RAW_CHARS = 4096


def store_batch(
    conn: sqlite3.Connection, registry: AgentRegistry, batch: Batch, *, keep_inserted: bool
) -> None:
    """Insert the batch's entries and quarantined lines; update the session catalog (inside
    the caller's transaction). `keep_inserted`: the stored entries go to `batch.stats.inserted`
    for the caller to write their views."""
    # An agent relinked later in this batch must own the batch's earlier entries too.
    if registry.relinked:
        batch.pending = [(registry.current(e), p) for e, p in batch.pending]
    # A prompt or compaction that an imported transcript already gave (or the reverse).
    known = len(batch.pending)
    batch.pending = drop_known_events(conn, batch.pending)
    batch.stats.duplicates += known - len(batch.pending)
    inserted, failed = _insert(conn, batch)
    now_ns = time.time_ns()
    for offset, line_no, error, data in batch.quarantined:
        quarantine_line(conn, batch.state, offset, line_no, error, data, now_ns)
    stats = batch.stats
    stats.quarantined += len(batch.quarantined)
    stats.entries += len(inserted)
    stats.duplicates += len(batch.pending) - failed - len(inserted)
    if not inserted:
        return
    if keep_inserted:
        stats.inserted.extend(inserted)
    deltas: dict[str, SessionDelta] = {}
    if len(inserted) == len(batch.pending):  # every entry stored, in the batch's order
        for se, (_, payload) in zip(inserted, batch.pending, strict=True):
            add_to_session(deltas, se.entry, payload)
    else:
        payloads = {(e.ts_ns, e.pid): p for e, p in batch.pending}
        for se in inserted:
            add_to_session(deltas, se.entry, payloads[(se.entry.ts_ns, se.entry.pid)])
    update_sessions(conn, deltas)


def _insert(conn: sqlite3.Connection, batch: Batch) -> tuple[list[StoredEntry], int]:
    """Insert the batch's entries; return those stored and how many could not be.

    If a value cannot be bound (a bug upstream let an unstorable value through), only the
    bad entry's line is quarantined; the rest of the batch is stored.
    """
    failed: list[Entry] = []

    def unstorable(e: Entry, err: Exception) -> None:
        failed.append(e)
        error = f"cannot store the entry: {type(err).__name__}: {err}"
        batch.quarantine(e.offset, e.line_no, error, batch.source(e.offset))

    inserted = store.insert_entries(conn, [e for e, _ in batch.pending], unstorable)
    return inserted, len(failed)


def quarantine_line(
    conn: sqlite3.Connection,
    state: FileState,
    offset: int,
    line_no: int,
    error: str,
    data: bytes,
    now_ns: int,
) -> None:
    """Store one bad line of `state`'s segment, its error and its start both redacted (an
    error may quote a bad value, such as an id)."""
    store.insert_quarantine(
        conn,
        state.file_id,
        state.name,
        offset,
        line_no,
        redact_text(error),
        quarantine_raw(data),
        now_ns,
    )


def quarantine_raw(data: bytes) -> bytes:
    """What the quarantine keeps of a bad line: its start, decoded and redacted, then capped."""
    # Decoded first: a bad line is raw JSON, whose escapes (`\"`) would hide a value's ends.
    # Undecodable bytes are kept as they were (surrogateescape): they may be the diagnosis.
    text = data[:QUARANTINE_SCAN_BYTES].decode("utf-8", "surrogateescape")
    decoded = unescape(text)
    redacted = redact_text(decoded)
    kept = (text if redacted is decoded else redacted)[:_QUARANTINE_RAW_CHARS]
    try:
        return kept.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate from a JSON escape
        return kept.encode("utf-8", "surrogatepass")
