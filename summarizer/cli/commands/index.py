"""Index commands: `ctxd ingest` and `rebuild` (`status` is in summarizer.cli.commands.status)."""

from __future__ import annotations

import argparse

from indexer import CtxdError, catch_up, history, rebuild_all, writer_lock
from indexer import rebuild as rebuild_search
from summarizer.common.cliargs import state_paths

__all__ = ["cmd_ingest", "cmd_rebuild"]


def cmd_ingest(args: argparse.Namespace) -> int:
    """Run one catch-up pass and report what it did."""
    paths = state_paths(args)
    result = catch_up(paths, wait_s=30.0)
    if result.read_only:
        raise CtxdError(
            f"cannot index: {paths.root} cannot be written ({result.read_only}); make it "
            "writable, then run `ctxd ingest` again"
        )
    if result.by_daemon:
        state = "caught up" if result.caught_up else "still behind after 30 s"
        print(f"the daemon holds the index; it is {state}")
        return 0 if result.caught_up else 1
    if not result.caught_up:
        print(
            "another ctxd process holds the index and it is still behind after 30 s; "
            "run `ctxd ingest` again in a moment"
        )
        return 1
    if result.by_other:
        print("another ctxd process indexed the spool; the index is caught up")
        return 0
    s = result.stats
    print(
        f"indexed {s.entries} entries from {s.lines} lines ({s.bytes} bytes); "
        f"{s.duplicates} duplicates, {s.quarantined} quarantined, {s.anomalies} anomalies"
    )
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    """Regenerate every view and the search index from the index."""
    paths = state_paths(args)
    catch_up(paths)
    with writer_lock(paths, wait_s=10.0):
        conn = history.connect(paths.index_db)
        try:
            written = rebuild_all(conn, paths)
            documents = rebuild_search(conn)
        finally:
            conn.close()
    print(f"rebuilt the views: {written} lines; the search index: {documents} documents")
    return 0
