"""The indexer's public API: the one module code outside indexer/ imports it by.

The summarizer, the CLI and the hook's answers take everything they need of the write path from
here: the base (errors, config, models, paths), the writer lock and catch-up, the spool's
snapshot and retention, redaction, and the query modules (`history`, `query`, `purge`,
`changes`, `recall`, `search_index`, ...; sqlite3 errors leave them as `IndexAccessError`s). The
job folders below are internal (tests/test_layers.py checks it).

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

    from indexer.config import Config, SummarizerConfig, TasksConfig, load_config, parse_config
    from indexer.daemon import protocol as daemon_channel
    from indexer.daemon.protocol import SOCKET_NAME, is_listening
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
        TranscriptPathError,
        translate_sqlite_errors,
    )
    from indexer.fileio import lines_backwards, sweep_temp_files, write_atomic
    from indexer.hook import EARLIER_HOOK_ENTRY_POINTS, EARLIER_HOOK_MODULE
    from indexer.index.release import LARGE_PASS_LINES, malloc_trim, release_memory
    from indexer.index.store import WRITER_CACHE_KIB, StoredEntry
    from indexer.ingest.lines import IngestStats
    from indexer.locks import flock_within, lock_is_held
    from indexer.lost_events import HOOK_FAILURES, failure_count, loss_files, losses
    from indexer.models import Entry
    from indexer.paths import (
        FILE_MODE,
        StatePaths,
        check_session_id,
        ensure_private_dir,
        is_valid_session_id,
        is_valid_view_name,
        resolve_state_paths,
    )
    from indexer.prepare.agentid import AGENT_ID_RE, extract_agent_id, is_valid_agent_id
    from indexer.prepare.normalize import AGENT_TOOLS, EDIT_TOOLS
    from indexer.queries import changes as changes
    from indexer.queries import history as history
    from indexer.queries import query as query
    from indexer.queries import recall as recall
    from indexer.queries import search as search_connections
    from indexer.queries.changes import AGENT_COLUMNS, ENTRY_COLUMNS, SESSION_COLUMNS
    from indexer.queries.porcelain import (
        active_constraint,
        agent_listing,
        newest_active_session,
        open_readonly,
        spool_behind,
        unwritable_reason,
    )
    from indexer.queries.query import (
        connect_readonly,
        count_agent_entries,
        index_is_current,
        spool_lag,
    )
    from indexer.queries.sessions import (
        AgentRow,
        agent_last_run,
        agents_ended_after,
        agents_of_sessions,
        last_trigger,
        session_agents,
        session_entries,
        session_entry_count,
    )
    from indexer.queries.tasks import completed_tasks, sessions_with_tasks
    from indexer.redact.logsafe import RedactingFormatter, bounded, redact_last_resort
    from indexer.redact.text import redact_entry, redact_text, secret_kinds
    from indexer.retention import purge as purge
    from indexer.retention.rewrite import rewrite_segment, session_of
    from indexer.retention.spool import (
        RetentionReport,
        delete_segment,
        prune_quarantine,
        prune_spool,
    )
    from indexer.search import index as search_index
    from indexer.search import query as search_query
    from indexer.search.index import (
        ENTRY_KINDS,
        MEMORY_KINDS,
        MemoryDoc,
        failure_body,
        index_memory,
        rebuild,
    )
    from indexer.spool.append import append_event
    from indexer.spool.changes import SpoolSnapshot, has_unread, snapshot, unread_bytes
    from indexer.spool.lineguard import INT64_MAX
    from indexer.spool.lines import is_segment_name
    from indexer.statedir import git_root, state_dir
    from indexer.transcripts.codex_rollouts import ROLLOUT_NAME, rollout_files
    from indexer.transcripts.paths import (
        all_project_dirs,
        codex_home,
        project_dir,
        subdirectory_dirs,
        transcript_files,
    )
    from indexer.views.entry_lines import iso_utc
    from indexer.views.update import rebuild_all
    from indexer.writer.catch_up import (
        LOCK_SLICE_S,
        IndexWriter,
        catch_up,
        daemon_running,
        daemon_writer_lock,
        ingest_spool,
        is_locked,
        lag,
        open_writer,
        wait_for_daemon,
        writer_lock,
    )
    from indexer.writer.import_ahead import import_files
    from indexer.writer.importer import ImportStats, TranscriptImporter

# The names each module gives the API.
_NAMES_BY_MODULE = {
    "indexer.config": ("Config", "SummarizerConfig", "TasksConfig", "load_config", "parse_config"),
    "indexer.daemon.protocol": ("SOCKET_NAME", "is_listening"),
    "indexer.errors": (
        "ConfigError", "CtxdError", "IndexAccessError", "IndexBusyError", "IndexCorruptError",
        "IndexLockedError", "IndexUnavailableError", "InvalidIdError", "StateDirError",
        "TranscriptPathError", "translate_sqlite_errors",
    ),
    "indexer.hook": ("EARLIER_HOOK_ENTRY_POINTS", "EARLIER_HOOK_MODULE"),
    "indexer.fileio": ("lines_backwards", "sweep_temp_files", "write_atomic"),
    "indexer.index.release": ("LARGE_PASS_LINES", "malloc_trim", "release_memory"),
    "indexer.index.store": ("WRITER_CACHE_KIB", "StoredEntry"),
    "indexer.ingest.lines": ("IngestStats",),
    "indexer.locks": ("flock_within", "lock_is_held"),
    "indexer.lost_events": ("HOOK_FAILURES", "failure_count", "loss_files", "losses"),
    "indexer.models": ("Entry",),
    "indexer.paths": (
        "FILE_MODE", "StatePaths", "check_session_id", "ensure_private_dir", "is_valid_session_id",
        "is_valid_view_name", "resolve_state_paths",
    ),
    "indexer.prepare.agentid": ("AGENT_ID_RE", "extract_agent_id", "is_valid_agent_id"),
    "indexer.prepare.normalize": ("AGENT_TOOLS", "EDIT_TOOLS"),
    "indexer.queries.changes": ("AGENT_COLUMNS", "ENTRY_COLUMNS", "SESSION_COLUMNS"),
    "indexer.queries.porcelain": (
        "active_constraint", "agent_listing", "newest_active_session", "open_readonly",
        "spool_behind", "unwritable_reason",
    ),
    "indexer.queries.query": (
        "connect_readonly", "count_agent_entries", "index_is_current", "spool_lag",
    ),
    "indexer.queries.sessions": (
        "AgentRow", "agent_last_run", "agents_ended_after", "agents_of_sessions", "last_trigger",
        "session_agents", "session_entries", "session_entry_count",
    ),
    "indexer.queries.tasks": ("completed_tasks", "sessions_with_tasks"),
    "indexer.redact.logsafe": ("RedactingFormatter", "bounded", "redact_last_resort"),
    "indexer.redact.text": ("redact_entry", "redact_text", "secret_kinds"),
    "indexer.retention.rewrite": ("rewrite_segment", "session_of"),
    "indexer.retention.spool": (
        "RetentionReport", "delete_segment", "prune_quarantine", "prune_spool",
    ),
    "indexer.search.index": (
        "ENTRY_KINDS", "MEMORY_KINDS", "MemoryDoc", "failure_body", "index_memory", "rebuild",
    ),
    "indexer.spool.append": ("append_event",),
    "indexer.spool.changes": ("SpoolSnapshot", "has_unread", "snapshot", "unread_bytes"),
    "indexer.spool.lineguard": ("INT64_MAX",),
    "indexer.spool.lines": ("is_segment_name",),
    "indexer.statedir": ("git_root", "state_dir"),
    "indexer.transcripts.codex_rollouts": ("ROLLOUT_NAME", "rollout_files"),
    "indexer.transcripts.paths": (
        "codex_home",
        "all_project_dirs", "project_dir", "subdirectory_dirs", "transcript_files",
    ),
    "indexer.views.entry_lines": ("iso_utc",),
    "indexer.views.update": ("rebuild_all",),
    "indexer.writer.catch_up": (
        "LOCK_SLICE_S", "IndexWriter", "catch_up", "daemon_running", "daemon_writer_lock",
        "ingest_spool", "is_locked", "lag", "open_writer", "wait_for_daemon", "writer_lock",
    ),
    "indexer.writer.import_ahead": ("import_files",),
    "indexer.writer.importer": ("ImportStats", "TranscriptImporter"),
}
_EXPORTS = {name: module for module, names in _NAMES_BY_MODULE.items() for name in names}

# Query modules, exported whole: callers use them as namespaces (`history.entries(...)`).
_MODULES = {
    "safefs": "indexer.safefs",
    "changes": "indexer.queries.changes",
    "daemon_channel": "indexer.daemon.protocol",
    "history": "indexer.queries.history",
    "purge": "indexer.retention.purge",
    "query": "indexer.queries.query",
    "recall": "indexer.queries.recall",
    "search_connections": "indexer.queries.search",
    "search_index": "indexer.search.index",
    "search_query": "indexer.search.query",
}

__all__ = [
    "AGENT_COLUMNS", "AGENT_ID_RE", "AGENT_TOOLS", "EARLIER_HOOK_ENTRY_POINTS",
    "EARLIER_HOOK_MODULE", "EDIT_TOOLS", "ENTRY_COLUMNS", "ENTRY_KINDS", "FILE_MODE",
    "HOOK_FAILURES", "INT64_MAX", "LARGE_PASS_LINES", "LOCK_SLICE_S", "MEMORY_KINDS",
    "ROLLOUT_NAME", "SESSION_COLUMNS", "SOCKET_NAME", "WRITER_CACHE_KIB", "AgentRow", "Config",
    "ConfigError", "CtxdError", "Entry", "ImportStats", "IndexAccessError", "IndexBusyError",
    "IndexCorruptError", "IndexLockedError", "IndexUnavailableError", "IndexWriter", "IngestStats",
    "InvalidIdError", "MemoryDoc", "RedactingFormatter", "RetentionReport", "SpoolSnapshot",
    "StateDirError", "StatePaths", "StoredEntry", "SummarizerConfig", "TasksConfig",
    "TranscriptImporter", "TranscriptPathError", "active_constraint", "agent_last_run",
    "agent_listing", "agents_ended_after", "agents_of_sessions", "all_project_dirs", "append_event",
    "bounded", "catch_up", "changes", "check_session_id", "codex_home", "completed_tasks",
    "connect_readonly", "count_agent_entries", "daemon_channel", "daemon_running",
    "daemon_writer_lock", "delete_segment", "ensure_private_dir", "extract_agent_id",
    "failure_body", "failure_count", "flock_within", "git_root", "has_unread", "history",
    "import_files", "index_is_current", "index_memory", "ingest_spool", "is_listening", "is_locked",
    "is_segment_name", "is_valid_agent_id", "is_valid_session_id", "is_valid_view_name", "iso_utc",
    "lag", "last_trigger", "lines_backwards", "load_config", "lock_is_held", "loss_files", "losses",
    "malloc_trim", "newest_active_session", "open_readonly", "open_writer", "parse_config",
    "project_dir", "prune_quarantine", "prune_spool", "purge", "query", "rebuild", "rebuild_all",
    "recall", "redact_entry", "redact_last_resort", "redact_text", "release_memory",
    "resolve_state_paths", "rewrite_segment", "rollout_files", "safefs", "search_connections",
    "search_index", "search_query", "secret_kinds", "session_agents", "session_entries",
    "session_entry_count", "session_of", "sessions_with_tasks", "snapshot", "spool_behind",
    "spool_lag", "state_dir", "subdirectory_dirs", "sweep_temp_files", "transcript_files",
    "translate_sqlite_errors", "unread_bytes", "unwritable_reason", "wait_for_daemon",
    "write_atomic", "writer_lock",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is not None:
        return getattr(importlib.import_module(module), name)
    whole = _MODULES.get(name)
    if whole is not None:
        return importlib.import_module(whole)
    raise AttributeError(f"module 'indexer' has no attribute {name!r}")
