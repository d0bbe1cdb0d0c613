"""A batch of transcript lines to prepared events and quarantines, with no index (pure).

The import's writer runs it in process, or its prepare worker does (one batch ahead): either
way the file's Converter, which remembers calls waiting for their results, sees every line of
the file in order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import msgspec

from indexer.config import IngestConfig
from indexer.prepare.line import Prepared, failed, oversize_error, prepare_event, quarantined
from indexer.transcripts.imported import IMPORT_PID, ImportedEvent, RecordError

__all__ = ["ORPHAN_LINES", "Converted", "LineConverter", "prepare_transcript_lines"]


class LineConverter(Protocol):
    """What turns one transcript's lines, in order, into hook events: Claude Code's
    (transcript_records.Converter) or Codex's (codex_rollouts.CodexConverter)."""

    def convert(self, data: bytes, offset: int, line_no: int) -> list[ImportedEvent]: ...

    def oldest_pending(self, *, with_text: bool) -> tuple[int, int] | None: ...

    def forget_older_than(self, line_no: int) -> None: ...

# A tool call still without its result this many lines later never gets one (the session was
# killed mid-call): stop holding the committed offset back for it.
ORPHAN_LINES = 5000


class Converted(msgspec.Struct, array_like=True, gc=False):
    """What a batch of transcript lines became, in line order."""

    prepared: list[Prepared]
    # Indexes into `prepared` of whole lines quarantined before any event (not a record, too
    # long, or a record no rule foresaw); every other item is one event of a line.
    bad: list[int]
    line_no: int  # the number of the batch's last line
    # Where the committed offset must stay (offset, lines before it): the oldest line still
    # needed later; None: after the batch.
    held: tuple[int, int] | None
    # In process only: what makes each event's JSON, for a late quarantine (None for `bad`).
    sources: list[Callable[[], bytes] | None] = []


def prepare_transcript_lines(
    converter: LineConverter,
    buf: bytes | memoryview,
    end: int,
    pos: int,
    line_no: int,
    file_id: int,
    cfg: IngestConfig,
    *,
    is_live: bool,
    host: str = "",
) -> Converted:
    """Prepare the lines of `buf` (read at `pos`, after line `line_no`) up to `end`, just after
    a line's b"\\n"; then give up on calls too old to get a result, and say what is held.
    `host` names the client that wrote the transcript ("" Claude Code, "codex")."""
    data = bytes(buf[:end]) if isinstance(buf, memoryview) else buf
    out = Converted([], [], line_no, None, [])
    start = 0
    find = data.find
    while start < end:
        stop = find(b"\n", start)
        line_no += 1
        _line(out, converter, data[start:stop], pos + start, line_no, file_id, cfg, host)
        start = stop + 1
    out.line_no = line_no
    converter.forget_older_than(line_no - ORPHAN_LINES)
    # A call whose result is not read yet keeps the offset before its line: the next run
    # reads the call again and joins it to its result.
    out.held = converter.oldest_pending(with_text=is_live)
    return out


def _line(
    out: Converted,
    converter: LineConverter,
    data: bytes,
    offset: int,
    line_no: int,
    file_id: int,
    cfg: IngestConfig,
    host: str,
) -> None:
    if not data or data.isspace():  # isspace stops at the first other byte
        return
    if len(data) > cfg.max_line_bytes:
        _bad(out, quarantined(offset, line_no, oversize_error(len(data)), data))
        return
    try:
        events = converter.convert(data, offset, line_no)
    except RecordError as e:
        _bad(out, quarantined(offset, line_no, str(e), data))
        return
    except Exception as e:  # a record shape no rule foresaw must not stop the import (I6)
        _bad(out, failed(offset, line_no, e, data))
        return
    for event in events:
        out.prepared.append(
            prepare_event(
                offset,
                line_no,
                event.ts_ns,
                IMPORT_PID,
                event.payload,
                event.event_json,
                file_id,
                cfg,
                host,
            )
        )
        out.sources.append(event.event_json)


def _bad(out: Converted, p: Prepared) -> None:
    """Add a whole line quarantined before any event was made of it."""
    out.bad.append(len(out.prepared))
    out.prepared.append(p)
    out.sources.append(None)
