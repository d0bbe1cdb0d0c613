"""What the prepare worker's tests share: a worker program that answers garbage, and the
check that no child process is left."""

from __future__ import annotations

import os
from pathlib import Path

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
