"""Log text as ctxd may keep or print it: redacted in decoded form, bounded, payload-free failures.

An exception raised while one event is processed can quote that event (a `KeyError` of a
value, a message built from a field): its message is never logged where the event is not yet
redacted. Everything else a handler of ctxd's writes (the daemon's `ctxd.log`, the terminal)
goes through `RedactingFormatter`, which also catches what a library logs.
"""

from __future__ import annotations

import logging
import os
import sys

__all__ = ["MAX_RECORD_CHARS", "RedactingFormatter", "bounded", "failure", "redact_last_resort"]

# A longer record keeps its head and tail (a usual traceback fits; a quoted payload may not).
MAX_RECORD_CHARS = 8192
_INSTALLED = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def bounded(text: str, limit: int = MAX_RECORD_CHARS) -> str:
    """text, or its head and tail around a note of how much was cut when it is longer."""
    if len(text) <= limit:
        return text
    keep = limit // 2
    return f"{text[:keep]} … [{len(text) - 2 * keep} characters cut] … {text[-keep:]}"


def failure(exc: BaseException) -> str:
    """Where and what failed, without the exception's message (which may quote the event):
    `KeyError in indexer/prepare/normalize.py:123 (normalize)`."""
    import traceback  # here: every command imports this module, few ever fail

    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return type(exc).__name__
    last = frames[-1]
    path = last.filename
    if path.startswith(_INSTALLED):  # ctxd's own code: relative to where it is installed
        path = path[len(_INSTALLED) :]
    return f"{type(exc).__name__} in {path}:{last.lineno} ({last.name})"


class RedactingFormatter(logging.Formatter):
    """A Formatter whose whole output (message, exception, stack) is redacted, then bounded."""

    def format(self, record: logging.LogRecord) -> str:
        from indexer.redact.text import redact_text  # loaded on the first record, not at import

        return bounded(redact_text(super().format(record)))


class _Stderr(logging.Handler):
    """Writes to sys.stderr as it is when a record comes (like logging's own last resort)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:
            self.handleError(record)


def redact_last_resort() -> None:
    """Route what is logged with no handler configured (a command, not the daemon) through
    RedactingFormatter, as logging's last resort does: warnings and errors, to stderr."""
    handler = _Stderr(logging.WARNING)
    handler.setFormatter(RedactingFormatter())
    logging.lastResort = handler
