"""The indexer's exception tree; every message says what, where, and how to recover.

CtxdError(Exception)
├── ConfigError          a config file or key is invalid (names the file and key)
├── InvalidIdError       a session or agent id cannot become a path part
├── StateDirError        the state directory is missing, unwritable or unsafe
├── IndexBusyError       another process holds the writer lock (daemon.lock)
├── IndexCorruptError    index.db cannot be opened or has an unknown schema version
└── TranscriptPathError  a transcript file or folder to import is missing or unreadable
"""

from __future__ import annotations


class CtxdError(Exception):
    """Base of every error ctxd raises on purpose."""


class ConfigError(CtxdError):
    """A configuration file or key is invalid."""


class InvalidIdError(CtxdError, ValueError):
    """A session or agent id is not safe to use as a path part."""


class StateDirError(CtxdError):
    """The state directory cannot be used."""


class IndexBusyError(CtxdError):
    """Another process holds the writer lock."""


class IndexCorruptError(CtxdError):
    """The index database cannot be used."""


class TranscriptPathError(CtxdError):
    """A transcript file or folder to import does not exist or cannot be read."""
