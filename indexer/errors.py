"""The indexer's exception tree; every message says what, where, and how to recover.

CtxdError(Exception)
├── ConfigError          a config file or key is invalid (names the file and key)
├── InvalidIdError       a session or agent id cannot become a path part
├── StateDirError        the state directory is missing, unwritable or unsafe
├── TranscriptPathError  a transcript file or folder to import is missing or unreadable
└── IndexAccessError     the index cannot be used (sqlite3 errors become one of these)
    ├── IndexBusyError        another process holds the writer lock (daemon.lock)
    ├── IndexLockedError      SQLite stayed locked by another connection past its timeout
    ├── IndexCorruptError     index.db is damaged, not a database, or of an unknown schema
    └── IndexUnavailableError index.db is missing or cannot be opened

`translate_sqlite_errors` turns sqlite3's exceptions into this tree at the boundary of the
index's public API, so that callers above it catch ctxd's errors and never sqlite3's.
"""

from __future__ import annotations

import functools
import sys

# Not `from typing import TYPE_CHECKING`: the SessionStart fast path imports this module (by
# indexer.safefs) and must not pay for `typing`; mypy treats any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType
    from typing import ParamSpec, TypeVar

    _P = ParamSpec("_P")
    _R = TypeVar("_R")


class CtxdError(Exception):
    """Base of every error ctxd raises on purpose."""


class ConfigError(CtxdError):
    """A configuration file or key is invalid."""


class InvalidIdError(CtxdError, ValueError):
    """A session or agent id is not safe to use as a path part."""


class StateDirError(CtxdError):
    """The state directory cannot be used."""


class IndexAccessError(CtxdError):
    """The index database cannot be used (the base of the sqlite3 translations)."""


class IndexBusyError(IndexAccessError):
    """Another process holds the writer lock."""


class IndexLockedError(IndexAccessError):
    """SQLite stayed locked by another connection past its busy timeout.

    Not an IndexBusyError: callers that fall back to the daemon when the writer lock is held
    must not take a stuck database lock for a running daemon.
    """


class IndexCorruptError(IndexAccessError):
    """The index database is damaged, is not a database, or has an unknown schema."""


class IndexUnavailableError(IndexAccessError):
    """The index database is missing or cannot be opened."""


# SQLite's messages (stable across versions) -> the class that says what to do about them.
_BUSY = ("database is locked", "database table is locked", "database schema is locked")
_CORRUPT = ("file is not a database", "malformed", "corrupt", "no such table", "no such column")
_UNAVAILABLE = ("unable to open database file", "readonly database", "disk i/o error")


class translate_sqlite_errors:
    """Context manager and decorator: sqlite3 errors inside become IndexAccessError subclasses.

    `where` names the database (a path) or the query, so the message says what failed. Used
    once, at the public API of the index (`indexer.queries.query`); sqlite3 is not imported here, so
    the hook, which imports this module, stays free of it.
    """

    def __init__(self, where: str = "index") -> None:
        self.where = where

    def __call__(self, func: Callable[_P, _R]) -> Callable[_P, _R]:
        where = self.where

        @functools.wraps(func)
        def guarded(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:  # a bare try costs nothing until an exception: the hot queries stay fast
                return func(*args, **kwargs)
            except Exception as e:
                sqlite3 = sys.modules.get("sqlite3")
                if sqlite3 is not None and isinstance(e, sqlite3.Error):
                    raise translate(e, where) from e
                raise

        return guarded

    def __enter__(self) -> translate_sqlite_errors:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        sqlite3 = sys.modules.get("sqlite3")
        if exc is None or sqlite3 is None or not isinstance(exc, sqlite3.Error):
            return
        raise translate(exc, self.where) from exc


def translate(exc: BaseException, where: str = "index") -> IndexAccessError:
    """The ctxd error for one sqlite3 error, with a message that says how to recover."""
    text = str(exc)
    low = text.lower()
    if any(m in low for m in _BUSY):
        return IndexLockedError(
            f"{where}: the index is locked by another process ({text}); retry in a moment, "
            "or stop the daemon with `ctxd stop`"
        )
    if any(m in low for m in _UNAVAILABLE):
        return IndexUnavailableError(
            f"{where}: cannot open the index ({text}); check the state directory exists and "
            "is writable, or run `ctxd ingest` to create it"
        )
    if any(m in low for m in _CORRUPT):
        return IndexCorruptError(
            f"{where}: the index is damaged ({text}); move it aside and run `ctxd rebuild`"
        )
    return IndexAccessError(f"{where}: the index could not be used ({text}); run `ctxd doctor`")


class TranscriptPathError(CtxdError):
    """A transcript file or folder to import does not exist or cannot be read."""
