"""ctxd's write path: the hook, the spool, and the SQLite index with per-agent views.

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
        IndexBusyError,
        IndexCorruptError,
        InvalidIdError,
        StateDirError,
    )
    from indexer.models import Entry
    from indexer.paths import StatePaths, resolve_state_paths
    from indexer.store import StoredEntry
    from indexer.writer import catch_up, is_locked, open_writer, writer_lock

_EXPORTS = {
    "Config": "indexer.config",
    "load_config": "indexer.config",
    "parse_config": "indexer.config",
    "ConfigError": "indexer.errors",
    "CtxdError": "indexer.errors",
    "IndexBusyError": "indexer.errors",
    "IndexCorruptError": "indexer.errors",
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
}

__all__ = [
    "Config",
    "ConfigError",
    "CtxdError",
    "Entry",
    "IndexBusyError",
    "IndexCorruptError",
    "InvalidIdError",
    "StateDirError",
    "StatePaths",
    "StoredEntry",
    "catch_up",
    "is_locked",
    "load_config",
    "open_writer",
    "parse_config",
    "resolve_state_paths",
    "writer_lock",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'indexer' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
