"""What `ctxd init` created or added in a project (init.json), so `--uninstall` undoes just that."""

from __future__ import annotations

import json
from pathlib import Path

from indexer import StatePaths
from summarizer.cli.setup.install import write_private

__all__ = ["drop_record", "read_record", "remember", "remember_created", "was_created"]

_RECORD = "init.json"  # in the state dir: the files and folders `ctxd init` created


def was_created(paths: StatePaths, path: Path) -> bool:
    """True if `ctxd init` recorded creating `path` (so `--uninstall` may remove it)."""
    return str(path) in _created_paths(paths)


def read_record(paths: StatePaths) -> dict[str, list[str]]:
    """What `ctxd init` did here: "created" (files and folders), "gitignore" (lines added)."""
    try:
        doc = json.loads((paths.root / _RECORD).read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict):
        return {}
    return {
        key: [str(v) for v in values]
        for key, values in doc.items()
        if isinstance(key, str) and isinstance(values, list)
    }


def _created_paths(paths: StatePaths) -> list[str]:
    return read_record(paths).get("created", [])


def remember(paths: StatePaths, key: str, items: list[str]) -> None:
    """Record, before doing it, what ctxd is about to create or add (so a kill between the two
    still lets `--uninstall` undo it)."""
    doc = read_record(paths)
    known = doc.get(key, [])
    added = [item for item in items if item not in known]
    if added:
        doc[key] = known + added
        write_private(paths.root / _RECORD, (json.dumps(doc, indent=2) + "\n").encode())


def drop_record(paths: StatePaths, key: str) -> None:
    """Forget what was recorded under `key` (once it is undone)."""
    doc = read_record(paths)
    if doc.pop(key, None) is not None:
        write_private(paths.root / _RECORD, (json.dumps(doc, indent=2) + "\n").encode())


def remember_created(paths: StatePaths, new: list[Path]) -> None:
    """Record, before creating them, the files ctxd is about to create."""
    remember(paths, "created", [str(p) for p in new])
