"""ctxd's write path: the hook, the spool, and the SQLite index with per-agent views.

The summarizer reads the index through `indexer.query`, `indexer.history` and `indexer.purge`
(sqlite3 errors leave them as `IndexAccessError`s) and takes the helpers it needs from the
names exported here; the other modules are internal (tests/test_layers.py checks it).

Exports are resolved lazily (PEP 562) so that `ctxd-hook`, which imports `indexer.hook`
and therefore this package first, loads no third-party module (ARCHITECTURE I1).
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
    from indexer.hook_losses import HOOK_FAILURES, failure_count, loss_files, losses
    from indexer.hook_recall import RECALL_DIR, command_files, row_id
    from indexer.ingest_lines import IngestStats
    from indexer.lineguard import INT64_MAX
    from indexer.locks import flock_within, lock_is_held
    from indexer.logsafe import RedactingFormatter, bounded, redact_last_resort
    from indexer.models import Entry
    from indexer.normalize import AGENT_TOOLS, EDIT_TOOLS
    from indexer.paths import StatePaths, resolve_state_paths
    from indexer.plugin import CTXD_VENV, ignore_in_git, installed_ctxd
    from indexer.redact import redact_entry, redact_text, secret_kinds
    from indexer.release import LARGE_PASS_LINES, malloc_trim, release_memory
    from indexer.spool import is_segment_name
    from indexer.spool_changes import SpoolSnapshot, has_unread, snapshot, unread_bytes
    from indexer.spool_retention import (
        RetentionReport,
        delete_segment,
        prune_quarantine,
        prune_spool,
    )
    from indexer.spool_rewrite import rewrite_segment, session_of
    from indexer.statedir import git_root
    from indexer.store import WRITER_CACHE_KIB, StoredEntry
    from indexer.view_writer import iso_utc
    from indexer.views import rebuild_all
    from indexer.writer import IndexWriter, catch_up, is_locked, lag, open_writer, writer_lock

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
    "StoredEntry": "indexer.store",
    "catch_up": "indexer.writer",
    "is_locked": "indexer.writer",
    "open_writer": "indexer.writer",
    "writer_lock": "indexer.writer",
    "IndexAccessError": "indexer.errors",
    "IndexUnavailableError": "indexer.errors",
    "translate_sqlite_errors": "indexer.errors",
    "HOOK_FAILURES": "indexer.hook_losses",
    "RECALL_DIR": "indexer.hook_recall",
    "command_files": "indexer.hook_recall",
    "row_id": "indexer.hook_recall",
    "failure_count": "indexer.hook_losses",
    "loss_files": "indexer.hook_losses",
    "losses": "indexer.hook_losses",
    "write_atomic": "indexer.fileio",
    "sweep_temp_files": "indexer.fileio",
    "lines_backwards": "indexer.fileio",
    "iso_utc": "indexer.view_writer",
    "rebuild_all": "indexer.views",
    "AGENT_TOOLS": "indexer.normalize",
    "EDIT_TOOLS": "indexer.normalize",
    "INT64_MAX": "indexer.lineguard",
    "lock_is_held": "indexer.locks",
    "flock_within": "indexer.locks",
    "malloc_trim": "indexer.release",
    "release_memory": "indexer.release",
    "git_root": "indexer.statedir",
    "is_segment_name": "indexer.spool",
    "RetentionReport": "indexer.spool_retention",
    "delete_segment": "indexer.spool_retention",
    "prune_quarantine": "indexer.spool_retention",
    "prune_spool": "indexer.spool_retention",
    "rewrite_segment": "indexer.spool_rewrite",
    "session_of": "indexer.spool_rewrite",
    "SpoolSnapshot": "indexer.spool_changes",
    "has_unread": "indexer.spool_changes",
    "snapshot": "indexer.spool_changes",
    "IngestStats": "indexer.ingest_lines",
    "lag": "indexer.writer",
    "IndexWriter": "indexer.writer",
    "redact_entry": "indexer.redact",
    "redact_text": "indexer.redact",
    "secret_kinds": "indexer.redact",
    "RedactingFormatter": "indexer.logsafe",
    "bounded": "indexer.logsafe",
    "redact_last_resort": "indexer.logsafe",
    "LARGE_PASS_LINES": "indexer.release",
    "unread_bytes": "indexer.spool_changes",
    "WRITER_CACHE_KIB": "indexer.store",
    "CTXD_VENV": "indexer.plugin",
    "installed_ctxd": "indexer.plugin",
    "ignore_in_git": "indexer.plugin",
}

__all__ = [
    "AGENT_TOOLS",
    "CTXD_VENV",
    "EDIT_TOOLS",
    "HOOK_FAILURES",
    "INT64_MAX",
    "LARGE_PASS_LINES",
    "RECALL_DIR",
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
    "command_files",
    "delete_segment",
    "failure_count",
    "flock_within",
    "git_root",
    "has_unread",
    "ignore_in_git",
    "installed_ctxd",
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
    "row_id",
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
