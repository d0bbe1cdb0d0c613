"""What the prepare worker's tests share: a worker program that answers garbage, and the
check that no child process is left."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from indexer.ingest.worker import PrepareWorker

# A worker that says ready, then answers every batch with bytes that are no reply.
GARBAGE_WORKER = (
    "import os, struct\n"
    "def frame():\n"
    "    n = struct.unpack('<Q', os.read(0, 8))[0]\n"
    "    while n: n -= len(os.read(0, min(n, 65536)))\n"
    "frame()\n"
    "os.write(1, struct.pack('<Q', 5) + b'ready')\n"
    "while True:\n"
    "    frame(); frame()\n"
    "    os.write(1, struct.pack('<Q', 4) + b'junk')\n"
)


def no_child_left(after: str) -> None:
    """Fail if this process has a child (a worker not reaped `after` its work)."""
    children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()
    assert children == [], f"child processes left after {after}: {children}"


def signal_at(
    monkeypatch: pytest.MonkeyPatch, method: str, call: int, sig: signal.Signals
) -> list[int]:
    """Wrap `PrepareWorker.<method>` (how the writer waits for a result) to send `sig` to the
    worker just before its `call`-th use (0: never); return the live list of the pids of
    every use."""
    pids: list[int] = []
    real = getattr(PrepareWorker, method)

    def wrapped(self: PrepareWorker, *args: Any) -> Any:
        pids.append(self.pid)
        if len(pids) == call:
            os.kill(self.pid, sig)
        return real(self, *args)

    monkeypatch.setattr(PrepareWorker, method, wrapped)
    return pids
