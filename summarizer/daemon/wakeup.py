"""Waking the daemon's loop from any thread or a signal handler: a self-pipe, no lock taken.

A Python signal handler runs in the main thread between two bytecodes of whatever it
interrupted, which may hold a lock: the logging handler's, the redaction scanner's, the
`threading.Event` condition the loop was clearing. A handler that takes any of them again
waits forever. So the handler only records the signal and writes one byte here (`set`); the
loop, blocked in poll() on the other end, wakes and does the rest in its own time.
"""

from __future__ import annotations

import os
import select
import signal
from types import FrameType
from typing import Protocol


class Wakeup:
    """A self-pipe with the `set` / `wait` / `clear` of a threading.Event, safe in a handler."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self._poll = select.poll()
        self._poll.register(self._read, select.POLLIN)
        self._closed = False

    def set(self) -> None:
        """Wake the waiter: one write, no lock (a full pipe is a wake-up already pending)."""
        if self._closed:  # its fd number may belong to another file by now
            return
        try:
            os.write(self._write, b"\0")
        except (BlockingIOError, OSError):
            pass

    def wait(self, timeout_s: float) -> bool:
        """Block until `set` or `timeout_s`; True if woken. Consumes the pending wake-ups."""
        woken = bool(self._poll.poll(max(0, int(timeout_s * 1000 + 0.999))))
        self.clear()
        return woken

    def clear(self) -> None:
        """Forget wake-ups already pending."""
        try:
            while os.read(self._read, 4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def close(self) -> None:
        """Close both ends (after the loop and every thread that may `set` have ended; a
        signal handler's `set` after this does nothing)."""
        if self._closed:
            return
        self._closed = True
        for fd in (self._read, self._write):
            try:
                os.close(fd)
            except OSError:
                pass

    def __del__(self) -> None:
        self.close()


class Stoppable(Protocol):
    """What the signal handlers need of the daemon."""

    def on_signal(self, signum: int) -> None:
        """Record the signal and wake the loop; nothing else (see the module doc)."""


def install_signal_handlers(daemon: Stoppable) -> None:
    """SIGTERM and SIGINT ask the daemon to stop (main thread only, as `ctxd run` is)."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        daemon.on_signal(signum)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
