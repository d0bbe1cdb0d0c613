"""One spool line to a redacted, unattributed entry or its quarantine: no index needed (pure)."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from indexer.config import IngestConfig
from indexer.models import Entry, Envelope, HookPayload
from indexer.paths import is_valid_session_id
from indexer.prepare.codex_outcomes import adapt_captured
from indexer.prepare.normalize import PayloadError, normalize
from indexer.redact.logsafe import failure
from indexer.redact.text import redact_entry
from indexer.spool.lines import LineError, RawLine, decode_envelope, written_envelope

__all__ = [
    "QUARANTINE_SCAN_BYTES",
    "Prepared",
    "check_utf8",
    "event_of",
    "failed",
    "oversize_error",
    "prepare_event",
    "prepare_line",
    "prepare_lines",
    "quarantined",
]

_PAYLOAD = msgspec.json.Decoder(HookPayload)
# An event's raw JSON, for its quarantine: a spool line's bytes as read, or (an imported event,
# which has no such bytes) a function that makes them on that rare path.
EventSource = msgspec.Raw | Callable[[], bytes]
# The quarantine keeps at most the start of a bad line (see ingest.batch_store.quarantine_raw):
# a longer prefix would never be read, and a worker process would only copy it across.
QUARANTINE_SCAN_BYTES = 1 << 16


class Prepared(msgspec.Struct, frozen=True, gc=False, array_like=True, omit_defaults=True):
    """What one line (or one imported event) became before attribution: an entry, a
    quarantine reason, or nothing (a blank line). Encoded as JSON by the prepare worker."""

    offset: int
    line_no: int
    entry: Entry | None = None
    # The two payload fields the session catalog reads; the rest of the payload is not kept.
    session_title: str = ""
    reason: str = ""
    error: str = ""  # set: the line is quarantined for this reason
    data: bytes = b""  # what the quarantine row keeps of it (its start)
    failure: str = ""  # set: a bug, not bad input; where it failed, without the message


def prepare_lines(
    lines: list[RawLine], first_line_no: int, file_id: int, cfg: IngestConfig
) -> list[Prepared]:
    """Prepare consecutive lines; the first is line `first_line_no + 1` of its segment."""
    return [prepare_line(raw, first_line_no + i, file_id, cfg) for i, raw in enumerate(lines, 1)]


def prepare_line(raw: RawLine, line_no: int, file_id: int, cfg: IngestConfig) -> Prepared:
    """One spool line, with any failure of this one line turned into its quarantine (I6).

    Anything one line can trigger (a bug in normalization or redaction included) must not
    block every later line.
    """
    try:
        return _prepare_line(raw, line_no, file_id, cfg)
    except Exception as e:  # one line must never stop ingest
        return failed(raw.offset, line_no, e, raw.data)


def prepare_event(
    offset: int,
    line_no: int,
    ts_ns: int,
    pid: int,
    payload: HookPayload,
    event_json: Callable[[], bytes],
    file_id: int,
    cfg: IngestConfig,
    host: str = "",
) -> Prepared:
    """One event built in memory (the transcript import): normalized, checked and redacted,
    or the reason it is quarantined. `event_json` makes its raw JSON, which only a quarantine
    needs; `host` names the client whose transcript it came from ("" Claude Code)."""
    try:
        return _prepare_payload(
            offset, line_no, ts_ns, pid, payload, event_json, file_id, cfg, host
        )
    except Exception as e:  # one event must never stop the import
        return failed(offset, line_no, e, event_json())


def event_of(line: bytes) -> bytes:
    """The raw event of a spool line that gave an entry, found as `prepare_line` found it
    (for a quarantine that comes later, when the entry cannot be stored)."""
    env = written_envelope(line)
    if env is not None:
        try:
            _PAYLOAD.decode(env.event)
            return bytes(env.event)
        except (msgspec.DecodeError, ValueError):
            pass
    return bytes(decode_envelope(line).event)


def oversize_error(length: int) -> str:
    """The quarantine reason of a line longer than [ingest] max_line_bytes."""
    return f"line exceeds [ingest] max_line_bytes ({length} bytes)"


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


def failed(offset: int, line_no: int, exc: Exception, data: bytes) -> Prepared:
    """A line (or event) whose handling raised `exc` (a bug, not bad input), quarantined."""
    return Prepared(
        offset,
        line_no,
        error=f"{type(exc).__name__}: {exc}",
        data=data[:QUARANTINE_SCAN_BYTES],
        failure=failure(exc),
    )


def quarantined(offset: int, line_no: int, error: str, data: bytes) -> Prepared:
    """A line (or event) quarantined for `error`, keeping the start of `data`."""
    return Prepared(offset, line_no, error=error, data=data[:QUARANTINE_SCAN_BYTES])


def _prepare_line(raw: RawLine, line_no: int, file_id: int, cfg: IngestConfig) -> Prepared:
    data = raw.data
    if not data.strip():
        return Prepared(raw.offset, line_no)  # the separator a hook adds after a torn fragment
    if len(data) > cfg.max_line_bytes:
        # A long line that fits in one read chunk (batch_bytes > max_line_bytes) must be
        # judged like one that does not: quarantined whatever the chunk boundaries.
        return quarantined(raw.offset, line_no, oversize_error(len(data)), data)
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
            return quarantined(raw.offset, line_no, str(e), data)
    return _prepare_envelope(raw.offset, line_no, env, file_id, cfg, payload)


def _prepare_envelope(
    offset: int,
    line_no: int,
    env: Envelope,
    file_id: int,
    cfg: IngestConfig,
    payload: HookPayload | None,
) -> Prepared:
    if payload is None:
        try:
            payload = _PAYLOAD.decode(env.event)
        except (msgspec.DecodeError, ValueError) as e:
            return quarantined(offset, line_no, _payload_error(e), bytes(env.event))
    if env.host == "codex":  # Codex's tools and fields in the shapes the normalizer knows
        payload = adapt_captured(payload, env.ts_ns)
    return _prepare_payload(
        offset, line_no, env.ts_ns, env.pid, payload, env.event, file_id, cfg, env.host
    )


def _prepare_payload(
    offset: int,
    line_no: int,
    ts_ns: int,
    pid: int,
    payload: HookPayload,
    source: EventSource,
    file_id: int,
    cfg: IngestConfig,
    host: str,
) -> Prepared:
    try:
        entry = normalize(
            payload,
            ts_ns=ts_ns,
            pid=pid,
            file_id=file_id,
            offset=offset,
            line_no=line_no,
            max_text_chars=cfg.max_text_chars,
            max_detail_bytes=cfg.max_detail_bytes,
        )
        if not is_valid_session_id(entry.session_id):
            raise PayloadError(f"session_id {entry.session_id[:80]!r} is not a valid id")
        check_utf8(bytes(entry.detail))
        if host:
            entry = msgspec.structs.replace(entry, host=host)
    except (msgspec.DecodeError, ValueError) as e:
        data = bytes(source) if isinstance(source, msgspec.Raw) else source()
        return quarantined(offset, line_no, _payload_error(e), data)
    # Redacted here, before attribution: the agent table keeps the entry's description.
    return Prepared(
        offset,
        line_no,
        redact_entry(entry),
        session_title=payload.session_title,
        reason=payload.reason,
    )


def _payload_error(e: Exception) -> str:
    if isinstance(e, UnicodeDecodeError):
        return f"bad hook payload: not valid UTF-8 ({e.reason} at byte {e.start})"
    return f"bad hook payload: {e}"
