"""The spool directory's watchdog observer: it only wakes the daemon's loop (I7).

inotify coalesces and drops events, and an exception in a handler kills watchdog's dispatcher
thread, so the daemon's stat rescan is what guarantees progress; this observer makes it
instant. It asks the kernel only for the changes that mean new data (its mask has no open,
access or close-without-write), so the daemon's own reads of the spool wake no thread at all.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

log = logging.getLogger("ctxd.daemon")

# Notifications that mean new bytes or a new, moved or removed segment. Never "opened",
# "closed_no_write" or "attrib": the daemon's own reads cause those, and waking on them made
# every pass trigger the next (a busy loop with nothing to do).
WAKE_EVENTS = frozenset({"created", "modified", "moved", "deleted", "closed"})


class Waker(Protocol):
    """What the watcher wakes: a threading.Event or the daemon's self-pipe."""

    def set(self) -> None:
        """Wake the loop."""


class SpoolWatcher:
    """A watchdog observer on the spool directory that only sets `wake`."""

    def __init__(self, spool_dir: str, wake: Waker) -> None:
        self.spool_dir = spool_dir
        self.wake = wake
        self.observer: Any = None
        self.restarts = 0
        self.polling_only = False

    def start(self) -> None:
        from watchdog.events import (
            FileClosedEvent,
            FileCreatedEvent,
            FileDeletedEvent,
            FileModifiedEvent,
            FileMovedEvent,
            FileSystemEvent,
            FileSystemEventHandler,
        )
        from watchdog.observers import Observer

        wake = self.wake

        class _Wake(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                try:
                    if event.event_type in WAKE_EVENTS:
                        wake.set()
                except Exception:  # an exception here would kill watchdog's dispatcher
                    log.exception("watchdog handler failed")

        try:
            observer = Observer()
            observer.schedule(
                _Wake(),
                self.spool_dir,
                recursive=False,
                # The inotify mask: created, modified, moved, deleted, closed after a write.
                event_filter=[
                    FileCreatedEvent,
                    FileModifiedEvent,
                    FileMovedEvent,
                    FileDeletedEvent,
                    FileClosedEvent,
                ],
            )
            observer.start()
        except OSError as e:
            # ENOSPC/EMFILE (inotify limits) or another failure: the rescan loop alone is
            # correct, only slower to notice; say how to fix it once.
            self.polling_only = True
            log.warning(
                "watchdog unavailable (%s); polling every rescan interval instead. Raise "
                "fs.inotify.max_user_watches / max_user_instances to restore instant wake-ups",
                e,
            )
            return
        self.observer = observer

    def check(self) -> None:
        """Restart a dead observer (a handler or emitter error stops it silently)."""
        if self.polling_only or self.observer is None:
            return
        emitters = list(getattr(self.observer, "emitters", []))
        if self.observer.is_alive() and all(e.is_alive() for e in emitters):
            return
        self.restarts += 1
        log.warning("watchdog observer died; restarting it (restart %d)", self.restarts)
        self.stop()
        self.start()

    def stop(self) -> None:
        if self.observer is not None:
            try:
                self.observer.stop()
                self.observer.join(timeout=2)
            except Exception:
                log.exception("stopping the watchdog observer failed")
            self.observer = None
