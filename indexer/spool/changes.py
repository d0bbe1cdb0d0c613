"""Whether the spool changed since the last ingest pass: a few `stat` calls instead of a pass."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

__all__ = ["SpoolSnapshot", "has_unread", "snapshot", "unread_bytes"]

# name -> (dev, inode, size, mtime_ns): a new, removed, replaced, grown or rewritten segment
# changes its tuple; an unchanged tuple means a pass would read nothing new.
SpoolSnapshot = dict[str, tuple[int, int, int, int]]


def snapshot(spool: Path) -> SpoolSnapshot:
    """The identity and size of every spool segment now (lstat only: no file is opened, so
    taking it causes no file notification)."""
    seen: SpoolSnapshot = {}
    try:
        with os.scandir(spool) as it:
            for d in it:
                if not d.name.endswith(".jsonl"):
                    continue
                try:
                    st = d.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if not stat.S_ISREG(st.st_mode):
                    continue  # a symlink planted in the spool is no segment (never read)
                seen[d.name] = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    except FileNotFoundError:
        pass
    return seen


def has_unread(seen: SpoolSnapshot, offsets: Mapping[str, int]) -> bool:
    """True if some segment holds bytes past its indexed offset (a partial last line waiting
    for its grace period, or a batch limit): such a spool still needs periodic passes."""
    return any(size > offsets.get(name, 0) for name, (_, _, size, _) in seen.items())


def unread_bytes(seen: SpoolSnapshot, offsets: Mapping[str, int]) -> int:
    """How many bytes of the spool lie past their segment's indexed offset."""
    return sum(max(0, size - offsets.get(name, 0)) for name, (_, _, size, _) in seen.items())
