"""The daemon's log: `ctxd.log` in the state directory, rotating, 0600, redacted."""

from __future__ import annotations

import io
import logging
import logging.handlers
import os
from pathlib import Path
from typing import cast

from indexer import Config, RedactingFormatter, StatePaths, safefs


class _PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A RotatingFileHandler whose every file, also the one a rollover creates, is 0600 (I10),
    and which opens, renames and deletes its files only through the state dir's fd."""

    def __init__(self, root: Path, filename: Path, max_bytes: int, backups: int) -> None:
        self.state_root = root
        super().__init__(filename, maxBytes=max_bytes, backupCount=backups)

    def _open(self) -> io.TextIOWrapper:
        stream = open(  # noqa: SIM115 - the handler owns and closes the stream
            self.baseFilename,
            self.mode,
            encoding=self.encoding,
            errors=self.errors,
            opener=self._private_opener,
        )
        return cast(io.TextIOWrapper, stream)

    def _private_opener(self, path: str, flags: int) -> int:
        return safefs.open_file(self.state_root, path, flags, 0o600)

    def doRollover(self) -> None:
        """ctxd.log -> ctxd.log.1 -> ... by renames relative to the state dir's fd."""
        if self.stream:
            self.stream.close()
            self.stream = None
        root, base = self.state_root, self.baseFilename
        for i in range(self.backupCount - 1, 0, -1):
            try:
                safefs.rename(root, f"{base}.{i}", f"{base}.{i + 1}")
            except FileNotFoundError:
                pass
        if self.backupCount > 0:
            safefs.rename(root, base, f"{base}.1")
        if not self.delay:
            self.stream = self._open()


def setup_logging(paths: StatePaths, config: Config, *, to_stderr: bool) -> None:
    """A rotating log in the state directory (0600), plus stderr in the foreground."""
    paths.ensure()
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    os.close(safefs.open_file(paths.root, paths.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT))
    handler = _PrivateRotatingFileHandler(
        paths.root, paths.log, config.daemon.log_max_bytes, config.daemon.log_backups
    )
    # Redacted and bounded: a library's message or a traceback may quote an event.
    fmt = RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handler.setFormatter(fmt)
    root.addHandler(handler)
    if to_stderr:
        err = logging.StreamHandler()
        err.setFormatter(fmt)
        root.addHandler(err)
    logging.getLogger("apscheduler").setLevel(logging.INFO)
