"""Give memory back after a large pass: SQLite's page cache, then the C allocator's free lists."""

from __future__ import annotations

import sqlite3

__all__ = ["LARGE_PASS_LINES", "malloc_trim", "release_memory"]

# A pass or compaction at least this large has filled the page cache (16 MB for the writer)
# with pages an idle daemon does not need; smaller ones are left alone (the cache pays off).
LARGE_PASS_LINES = 20_000


def release_memory(conn: sqlite3.Connection) -> None:
    """Free the connection's unused cache pages and return freed heap to the system."""
    conn.execute("PRAGMA shrink_memory")
    malloc_trim()


def malloc_trim() -> None:
    """Return the C allocator's freed memory to the system (glibc; elsewhere a no-op)."""
    # glibc keeps freed memory in its arenas; malloc_trim returns it. Elsewhere (musl, macOS)
    # the symbol is missing and there is nothing to do.
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)
