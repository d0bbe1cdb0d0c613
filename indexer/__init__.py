"""ctxd's write path: the spool, and the SQLite index with per-agent views.

The summarizer reads the index through `indexer.queries.query`, `indexer.queries.history`
and `indexer.retention.purge` (sqlite3 errors leave them as `IndexAccessError`s) and takes
the helpers it needs from the names exported here; the other modules are internal
(tests/test_layers.py checks it).

Exports are resolved lazily (PEP 562) so that the hook's SessionStart path, which imports
this package, loads no third-party module (ARCHITECTURE I1).
"""

from __future__ import annotations

import importlib

# Not `from typing import TYPE_CHECKING`: the SessionStart fast path imports this package (for
# indexer.safefs) and must not pay for `typing`; mypy treats any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from indexer.config import Config, load_config, parse_config
    from indexer.errors import (
        ConfigError,
        CtxdError,
        IndexAccessError,
        IndexBusyError,
        IndexCorruptError,
        IndexLockedError,
        IndexUnavailableError,
        InvalidIdError,
        StateDirError,
        translate_sqlite_errors,
    )
    from indexer.fileio import lines_backwards, sweep_temp_files, write_atomic
    from indexer.index.release import LARGE_PASS_LINES, malloc_trim, release_memory
    from indexer.index.store import WRITER_CACHE_KIB, StoredEntry
    from indexer.ingest.lines import IngestStats
    from indexer.locks import flock_within, lock_is_held
    from indexer.lost_events import HOOK_FAILURES, failure_count, loss_files, losses
    from indexer.models import Entry
    from indexer.paths import StatePaths, resolve_state_paths
    from indexer.prepare.normalize import AGENT_TOOLS, EDIT_TOOLS
    from indexer.redact.logsafe import RedactingFormatter, bounded, redact_last_resort
    from indexer.redact.text import redact_entry, redact_text, secret_kinds
    from indexer.retention.rewrite import rewrite_segment, session_of
    from indexer.retention.spool import (
        RetentionReport,
        delete_segment,
        prune_quarantine,
        prune_spool,
    )
    from indexer.spool.changes import SpoolSnapshot, has_unread, snapshot, unread_bytes
    from indexer.spool.lineguard import INT64_MAX
    from indexer.spool.lines import is_segment_name
    from indexer.statedir import git_root
    from indexer.views.update import rebuild_all
    from indexer.views.writer import iso_utc
    from indexer.writer.catch_up import (
        IndexWriter,
        catch_up,
        is_locked,
        lag,
        open_writer,
        writer_lock,
    )

_EXPORTS = {
    "Config": "indexer.config",
    "load_config": "indexer.config",
    "parse_config": "indexer.config",
    "ConfigError": "indexer.errors",
    "CtxdError": "indexer.errors",
    "IndexBusyError": "indexer.errors",
    "IndexCorruptError": "indexer.errors",
    "IndexLockedError": "indexer.errors",
    "InvalidIdError": "indexer.errors",
    "StateDirError": "indexer.errors",
    "Entry": "indexer.models",
    "StatePaths": "indexer.paths",
    "resolve_state_paths": "indexer.paths",
    "StoredEntry": "indexer.index.store",
    "catch_up": "indexer.writer.catch_up",
    "is_locked": "indexer.writer.catch_up",
    "open_writer": "indexer.writer.catch_up",
    "writer_lock": "indexer.writer.catch_up",
    "IndexAccessError": "indexer.errors",
    "IndexUnavailableError": "indexer.errors",
    "translate_sqlite_errors": "indexer.errors",
    "HOOK_FAILURES": "indexer.lost_events",
    "failure_count": "indexer.lost_events",
    "loss_files": "indexer.lost_events",
    "losses": "indexer.lost_events",
    "write_atomic": "indexer.fileio",
    "sweep_temp_files": "indexer.fileio",
    "lines_backwards": "indexer.fileio",
    "iso_utc": "indexer.views.writer",
    "rebuild_all": "indexer.views.update",
    "AGENT_TOOLS": "indexer.prepare.normalize",
    "EDIT_TOOLS": "indexer.prepare.normalize",
    "INT64_MAX": "indexer.spool.lineguard",
    "lock_is_held": "indexer.locks",
    "flock_within": "indexer.locks",
    "malloc_trim": "indexer.index.release",
    "release_memory": "indexer.index.release",
    "git_root": "indexer.statedir",
    "is_segment_name": "indexer.spool.lines",
    "RetentionReport": "indexer.retention.spool",
    "delete_segment": "indexer.retention.spool",
    "prune_quarantine": "indexer.retention.spool",
    "prune_spool": "indexer.retention.spool",
    "rewrite_segment": "indexer.retention.rewrite",
    "session_of": "indexer.retention.rewrite",
    "SpoolSnapshot": "indexer.spool.changes",
    "has_unread": "indexer.spool.changes",
    "snapshot": "indexer.spool.changes",
    "IngestStats": "indexer.ingest.lines",
    "lag": "indexer.writer.catch_up",
    "IndexWriter": "indexer.writer.catch_up",
    "redact_entry": "indexer.redact.text",
    "redact_text": "indexer.redact.text",
    "secret_kinds": "indexer.redact.text",
    "RedactingFormatter": "indexer.redact.logsafe",
    "bounded": "indexer.redact.logsafe",
    "redact_last_resort": "indexer.redact.logsafe",
    "LARGE_PASS_LINES": "indexer.index.release",
    "unread_bytes": "indexer.spool.changes",
    "WRITER_CACHE_KIB": "indexer.index.store",
}

__all__ = [
    "AGENT_TOOLS",
    "EDIT_TOOLS",
    "HOOK_FAILURES",
    "INT64_MAX",
    "LARGE_PASS_LINES",
    "WRITER_CACHE_KIB",
    "Config",
    "ConfigError",
    "CtxdError",
    "Entry",
    "IndexAccessError",
    "IndexBusyError",
    "IndexCorruptError",
    "IndexLockedError",
    "IndexUnavailableError",
    "IndexWriter",
    "IngestStats",
    "InvalidIdError",
    "RedactingFormatter",
    "RetentionReport",
    "SpoolSnapshot",
    "StateDirError",
    "StatePaths",
    "StoredEntry",
    "bounded",
    "catch_up",
    "delete_segment",
    "failure_count",
    "flock_within",
    "git_root",
    "has_unread",
    "is_locked",
    "is_segment_name",
    "iso_utc",
    "lag",
    "lines_backwards",
    "load_config",
    "lock_is_held",
    "loss_files",
    "losses",
    "malloc_trim",
    "open_writer",
    "parse_config",
    "prune_quarantine",
    "prune_spool",
    "rebuild_all",
    "redact_entry",
    "redact_last_resort",
    "redact_text",
    "release_memory",
    "resolve_state_paths",
    "rewrite_segment",
    "secret_kinds",
    "session_of",
    "snapshot",
    "sweep_temp_files",
    "translate_sqlite_errors",
    "unread_bytes",
    "write_atomic",
    "writer_lock",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'indexer' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
