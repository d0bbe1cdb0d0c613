"""The prepare worker: a child process that prepares lines while the single writer stores.

The writer sends a batch of complete lines; the worker returns what `prepare_lines` makes of
spool lines, or `prepare_transcript_lines` of a transcript's, in order, as JSON. The writer
alone decides offsets and commits them with the rows (I3). Spool lines need no state: the
writer prepares a batch itself whenever the worker is not ready, gone, late or wrong. A
transcript's converter lives in the worker (sent each file's name first, then its batches in
order); when the worker fails, the writer rebuilds the converter by reading the file again.

Frames on the child's stdin and stdout: an 8-byte little-endian length, then the body.
Writer to worker: the ingest config (JSON), then per request a header and a body (the lines'
bytes, or a transcript's name and agent type as JSON).
Worker to writer: b"ready" once, then per batch a `Reply` or a `Converted` (JSON).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import msgspec

from indexer.config import IngestConfig
from indexer.models import Entry
from indexer.prepare.line import Prepared, prepare_lines
from indexer.spool.lines import RawLine, split_lines
from indexer.transcripts.prepare import Converted, prepare_transcript_lines
from indexer.transcripts.records import Converter

__all__ = ["PrepareWorker", "WorkerFailedError", "main"]

# A batch takes the worker tens of milliseconds; only a hung or starved worker takes this long.
RESULT_TIMEOUT_S = 60.0
_LENGTH = struct.Struct("<Q")
# kind, file_id, offset of the first line, line_no before it, lines (spool) or is_live (transcript)
_HEADER = struct.Struct("<qqqqq")
_SPOOL_LINES, _TRANSCRIPT_FILE, _TRANSCRIPT_LINES = 0, 1, 2
_READY = b"ready"
_NO_DETAIL = Entry.__struct_defaults__[
    Entry.__struct_fields__.index("detail") - len(Entry.__struct_fields__)
]
_PIPE_BYTES = 1 << 20  # fewer system calls per batch (the kernel may grant less)
# -I: no environment or user site; the package is imported from where the writer's was.
_CHILD = (
    "import sys; sys.path.insert(0, sys.argv[1]); from indexer.ingest.worker import main; main()"
)


class WorkerFailedError(Exception):
    """The worker died, hung, or answered with something else than the batch's results."""


class Reply(msgspec.Struct, frozen=True, array_like=True):
    """One batch's results; `redo` lists the lines the writer must prepare itself (their
    result could not be encoded, such as a string with a lone surrogate)."""

    prepared: list[Prepared]
    redo: list[int] = []


class PrepareWorker:
    """The writer's handle on one worker process, started for one ingest pass."""

    def __init__(self, cfg: IngestConfig) -> None:
        root = str(Path(__file__).resolve().parents[2])  # the folder holding indexer/
        # stderr to /dev/null: a traceback could quote an unredacted event (I10).
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _CHILD, root],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._to = self._proc.stdin.fileno()
        self._from = self._proc.stdout.fileno()
        for fd in (self._to, self._from):
            os.set_blocking(fd, False)
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        self.is_ready = False
        self.in_flight: tuple[int, int] | None = None  # (file_id, offset) of the batch sent
        self.transcript_batches = 0  # sent and not answered yet
        self._decoder = msgspec.json.Decoder(Reply)
        # Replies read while a request was being sent: the import sends a batch before it
        # reads the reply to the one before, and a worker blocked on a full pipe would never
        # read that batch.
        self._inbox = bytearray()
        self._converted = msgspec.json.Decoder(Converted)
        try:
            self._send([msgspec.json.encode(cfg)], time.monotonic() + RESULT_TIMEOUT_S)
        except WorkerFailedError:
            self.close()
            raise

    @property
    def pid(self) -> int:
        return self._proc.pid

    def poll_ready(self) -> bool:
        """True once the worker has started (checked without waiting)."""
        if not self.is_ready and (self._inbox or select.select([self._from], [], [], 0)[0]):
            deadline = time.monotonic() + RESULT_TIMEOUT_S
            if self._recv(deadline) != _READY:
                raise WorkerFailedError("sent something else than its ready signal")
            self.is_ready = True
        return self.is_ready

    def submit(self, file_id: int, line_no: int, lines: list[RawLine], data: memoryview) -> None:
        """Send a batch: `data` holds exactly `lines`, each ended by its b"\\n"."""
        header = _HEADER.pack(_SPOOL_LINES, file_id, lines[0].offset, line_no, len(lines))
        self._send([header, data], time.monotonic() + RESULT_TIMEOUT_S)
        self.in_flight = (file_id, lines[0].offset)

    def open_transcript(self, path: str, agent_type: str, *, is_live: bool) -> None:
        """Start a transcript file: the batches sent next are its lines, from its offset."""
        header = _HEADER.pack(_TRANSCRIPT_FILE, 0, 0, 0, is_live)
        body = msgspec.json.encode([path, agent_type])
        self._send([header, body], time.monotonic() + RESULT_TIMEOUT_S)

    def submit_transcript(self, file_id: int, offset: int, line_no: int, data: memoryview) -> None:
        """Send the next batch of the open transcript: `data`, read at `offset` after line
        `line_no`, holds complete lines, each ended by its b"\n"."""
        header = _HEADER.pack(_TRANSCRIPT_LINES, file_id, offset, line_no, 0)
        self._send([header, data], time.monotonic() + RESULT_TIMEOUT_S)
        self.transcript_batches += 1

    def converted(self, offset: int, end: int, line_no: int, lines: int) -> Converted:
        """The result of the oldest transcript batch sent: `lines` lines from `offset` to
        `end`, after line `line_no`."""
        body = self._recv(time.monotonic() + RESULT_TIMEOUT_S)
        self.transcript_batches -= 1
        try:
            reply = self._converted.decode(body)
        except (msgspec.DecodeError, ValueError) as e:
            raise WorkerFailedError(f"sent a result that does not decode ({e})") from e
        if reply.line_no != line_no + lines or reply.sources:
            raise WorkerFailedError(f"sent the result of another batch for line {line_no + 1}")
        last = (offset, line_no)
        for p in reply.prepared:
            at = (p.offset, p.line_no)
            if not (last <= at and p.offset < end and p.line_no <= reply.line_no):
                raise WorkerFailedError(f"sent the result of another line for line {p.line_no}")
            last = at
        if any(not 0 <= i < len(reply.prepared) for i in reply.bad):
            raise WorkerFailedError("named a bad line it did not send")
        return reply

    def result(self, lines: list[RawLine], line_no: int) -> list[Prepared | None]:
        """The results of the batch in flight, which holds `lines`; None where the writer
        must prepare the line itself."""
        body = self._recv(time.monotonic() + RESULT_TIMEOUT_S)
        self.in_flight = None
        try:
            reply = self._decoder.decode(body)
        except (msgspec.DecodeError, ValueError) as e:
            raise WorkerFailedError(f"sent a result that does not decode ({e})") from e
        prepared: list[Prepared | None] = list(reply.prepared)
        if len(prepared) != len(lines):
            raise WorkerFailedError(f"sent {len(prepared)} results for {len(lines)} lines")
        for i in reply.redo:
            prepared[i] = None
        for i, (p, raw) in enumerate(zip(prepared, lines, strict=True), line_no + 1):
            if p is not None and (p.offset, p.line_no) != (raw.offset, i):
                raise WorkerFailedError(f"sent the result of another line for line {i}")
        return prepared

    def close(self) -> None:
        """Stop the worker and reap it: it never outlives the pass (no orphan, no zombie)."""
        proc = self._proc
        busy = self.in_flight is not None or self.transcript_batches > 0
        if proc.poll() is None and (busy or not self.is_ready):
            proc.kill()  # pure work only: nothing to finish or flush
        # Closed through their file objects only (never os.close on the number: another
        # thread of the daemon may get that number at once). End of input: the worker exits.
        for f in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError):
                f.close()  # type: ignore[union-attr]
        try:
            proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def _send(self, frames: list[bytes | memoryview], deadline: float) -> None:
        for frame in frames:
            for part in (_LENGTH.pack(len(frame)), frame):
                view = memoryview(part)
                while view:
                    wait = _remaining(deadline)
                    readable, writable, _ = select.select([self._from], [self._to], [], wait)
                    if readable:
                        self._drain()
                    if not writable:
                        if readable:
                            continue
                        raise WorkerFailedError(f"took no input for {RESULT_TIMEOUT_S:g} s")
                    try:
                        view = view[os.write(self._to, view) :]
                    except BlockingIOError:
                        continue
                    except OSError as e:  # EPIPE: it exited
                        raise WorkerFailedError(f"exited ({self._exit()})") from e

    def _recv(self, deadline: float) -> bytearray:
        head = self._read_exactly(_LENGTH.size, deadline)
        return self._read_exactly(_LENGTH.unpack(head)[0], deadline)

    def _drain(self) -> None:
        try:
            data = os.read(self._from, _PIPE_BYTES)
        except BlockingIOError:
            return
        if not data:
            raise WorkerFailedError(f"exited ({self._exit()})")
        self._inbox += data

    def _read_exactly(self, n: int, deadline: float) -> bytearray:
        buf = bytearray(n)
        got = min(n, len(self._inbox))
        if got:
            buf[:got] = self._inbox[:got]
            del self._inbox[:got]
        view = memoryview(buf)
        while got < n:
            if not select.select([self._from], [], [], _remaining(deadline))[0]:
                raise WorkerFailedError(f"gave no result within {RESULT_TIMEOUT_S:g} s")
            try:
                read = os.readv(self._from, [view[got:]])
            except BlockingIOError:
                continue
            if not read:
                raise WorkerFailedError(f"exited ({self._exit()})")
            got += read
        return buf

    def _exit(self) -> str:
        try:
            code = self._proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return "closed its output"
        return f"signal {-code}" if code < 0 else f"status {code}"


def _remaining(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


# --- the child's side ----------------------------------------------------------------------


def main() -> None:
    """The worker process: answer batches until the writer closes its input."""
    # The writer stops it (Ctrl-C in a terminal reaches the whole process group).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Its own copies of the pipes: nothing a library prints can corrupt a frame.
    inp, out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    try:
        serve(inp, out)
    except (EOFError, BrokenPipeError):
        pass  # the writer is done (or gone)


def serve(inp: int, out: int) -> None:
    """Read the config, say ready, then prepare each batch sent on `inp` and reply on `out`."""
    cfg = msgspec.json.decode(_read_frame(inp), type=IngestConfig)
    _write_frame(out, _READY)
    encoder = msgspec.json.Encoder()
    converter, is_live = Converter(""), False
    while True:
        kind, file_id, offset, line_no, count = _HEADER.unpack(_read_frame(inp))
        body = _read_frame(inp)
        if kind == _TRANSCRIPT_FILE:
            path, agent_type = msgspec.json.decode(body, type=tuple[str, str])
            converter, is_live = Converter(path, agent_type), bool(count)
            continue
        if kind == _TRANSCRIPT_LINES:
            converted = prepare_transcript_lines(
                converter, body, len(body), offset, line_no, file_id, cfg, is_live=is_live
            )
            _write_frame(out, _encode_converted(encoder, converted))
            continue
        lines, _ = split_lines(body, offset)
        if len(lines) != count:  # a writer bug: the writer sees the count and gives up on us
            _write_frame(out, encoder.encode(Reply([])))
            continue
        _write_frame(out, _encode(encoder, prepare_lines(lines, line_no, file_id, cfg)))


def _encode_converted(encoder: msgspec.json.Encoder, converted: Converted) -> bytes:
    """The batch's result; on a value JSON cannot carry (a lone surrogate), an empty frame:
    the writer then gives up on the worker and reads the file again itself."""
    converted.sources = []
    _fix_details(converted.prepared)
    try:
        return encoder.encode(converted)
    except (TypeError, ValueError):  # UnicodeEncodeError included
        return b""


def _fix_details(prepared: list[Prepared]) -> None:
    for i, p in enumerate(prepared):
        e = p.entry
        if e is not None and not e.detail and e.detail is not _NO_DETAIL:
            # msgspec leaves a default out only if it is the default object itself; an empty
            # Raw written out would make the reply invalid JSON.
            prepared[i] = msgspec.structs.replace(
                p, entry=msgspec.structs.replace(e, detail=_NO_DETAIL)
            )


def _encode(encoder: msgspec.json.Encoder, prepared: list[Prepared]) -> bytes:
    _fix_details(prepared)
    try:
        return encoder.encode(Reply(prepared))
    except (TypeError, ValueError):  # UnicodeEncodeError included
        pass
    kept, redo = [], []
    for i, p in enumerate(prepared):
        try:
            encoder.encode(p)
            kept.append(p)
        except (TypeError, ValueError):
            kept.append(Prepared(p.offset, p.line_no))  # the writer has the line
            redo.append(i)
    return encoder.encode(Reply(kept, redo))


def _read_frame(fd: int) -> bytes:
    (n,) = _LENGTH.unpack(_read_exactly(fd, _LENGTH.size))
    return _read_exactly(fd, n)


def _read_exactly(fd: int, n: int) -> bytes:
    parts, got = [], 0
    while got < n:
        part = os.read(fd, min(n - got, 1 << 22))
        if not part:
            raise EOFError
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def _write_frame(fd: int, body: bytes) -> None:
    for part in (_LENGTH.pack(len(body)), body):
        view = memoryview(part)
        while view:
            view = view[os.write(fd, view) :]
