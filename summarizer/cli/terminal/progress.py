"""A progress bar on stderr for catch-ups that last more than a second (terminal only)."""

# The bar watches the index from a thread (bytes of spool indexed so far), so the catch-up
# code knows nothing about it; tqdm is imported only once the work has lasted a second, so a
# quick command never loads it, and the hook and the SessionStart path never import this.

from __future__ import annotations

import os
import sys
import threading
from types import TracebackType

from indexer import StatePaths, spool_behind

__all__ = ["CatchUpProgress"]


def _delay() -> float:
    # CTXD_PROGRESS_AFTER_S lets the tests show the bar on a small backlog.
    try:
        return float(os.environ.get("CTXD_PROGRESS_AFTER_S", "1.0"))
    except ValueError:
        return 1.0


class CatchUpProgress:
    """Shows 'catching up the index' with a bar over the spool bytes, after a second."""

    def __init__(self, paths: StatePaths, command: str) -> None:
        self.paths, self.command = paths, command
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> CatchUpProgress:
        if sys.stderr.isatty():
            self._thread = threading.Thread(target=self._run, name="ctxd-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        if self._stop.wait(_delay()):
            return
        try:
            total = spool_behind(self.paths)
            if total > 0:
                self._show(total)
            if self.command == "rebuild" and not self._stop.is_set():
                self._spin("rewriting the views")
        except Exception:  # a progress bar must never break the command
            return

    def _spin(self, what: str) -> None:
        from tqdm import tqdm  # type: ignore[import-untyped]

        with tqdm(
            total=None, desc=f"ctxd {self.command}: {what}", bar_format="{desc} {elapsed}",
            file=sys.stderr, leave=False,
        ) as spinner:  # fmt: skip
            while not self._stop.wait(0.2):
                spinner.refresh()

    def _show(self, total: int) -> None:
        from tqdm import tqdm

        with tqdm(
            total=total, desc=f"ctxd {self.command}: catching up the index", unit="B",
            unit_scale=True, file=sys.stderr, leave=False, dynamic_ncols=True,
        ) as bar:  # fmt: skip
            while not self._stop.wait(0.2):
                left = spool_behind(self.paths)
                bar.update(max(0, total - left) - bar.n)
                if left == 0:
                    break
