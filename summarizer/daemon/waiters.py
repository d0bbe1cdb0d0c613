"""Clients waiting for a compaction: each is answered once the context files cover its entry."""

from __future__ import annotations

import threading
from typing import Any

from summarizer.daemon.channel import Reply


class Waiters:
    """`compact` requests (entry id, reply) between the request thread and the job thread."""

    def __init__(self, published: int = 0) -> None:
        self._lock = threading.Lock()
        self._waiting: list[tuple[int, Reply]] = []
        self.published = published  # the entry id the context files cover, last seen

    def __len__(self) -> int:
        with self._lock:
            return len(self._waiting)

    def add(self, target: int, reply: Reply) -> bool:
        """Wait for `target`; False (and answered at once) if the context files cover it."""
        with self._lock:
            published = self.published
            if published < target:
                self._waiting.append((target, reply))
                return True
        reply.send({"ok": True, "watermark": published})
        return False

    def after_run(self, published: int, top: int) -> None:
        """Answer those the context files now cover, and those beyond the index's last entry
        `top` (no run of this index can cover them)."""
        with self._lock:
            self.published = published
            done = [w for w in self._waiting if w[0] <= published or w[0] > top]
            self._waiting = [w for w in self._waiting if w not in done]
        for _target, reply in done:
            reply.send({"ok": True, "watermark": published})

    def answer_all(self, message: dict[str, Any]) -> None:
        """Answer everyone still waiting with `message` (a failure, or the daemon stopping)."""
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for _target, reply in waiting:
            reply.send(message)
