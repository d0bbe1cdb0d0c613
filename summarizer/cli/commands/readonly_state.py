"""What a read command says when the state dir cannot be written: it answers from the index."""

from __future__ import annotations

import sys

from indexer import StatePaths, spool_behind

__all__ = ["note_unindexed"]


def note_unindexed(command: str, paths: StatePaths, reason: str) -> None:
    """One stderr line if recent events are not indexed because `paths.root` cannot be
    written (`reason`); the command still answers, from what was indexed before."""
    behind = spool_behind(paths)
    if behind:
        print(
            f"ctxd {command}: note: {paths.root} cannot be written ({reason}), so its last "
            f"{behind} bytes of events are not indexed and not shown; make it writable and "
            "run the command again",
            file=sys.stderr,
        )
