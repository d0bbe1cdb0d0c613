"""`ctxd compact`: catch up, compact here or in the daemon, report."""

from __future__ import annotations

import argparse

from summarizer.memory.compact import compact_now
from summarizer.resume.writer import refresh_after_compaction


def cmd_compact(args: argparse.Namespace) -> int:
    """Handler of `ctxd compact`: catch up, compact here or in the daemon, report."""
    from indexer import load_config
    from summarizer.common.cliargs import state_paths

    paths = state_paths(args)
    result = compact_now(
        paths, load_config(paths.config), trigger="manual", after=[refresh_after_compaction]
    )
    if result.by_daemon:
        who = "the daemon compacted"
    else:
        who = f"compacted {result.stats.entries} new entries"
    print(
        f"{who}; memory at entry {result.watermark}: +{result.new_decisions} decisions, "
        f"+{result.new_failures} failures; context files in {paths.context}"
    )
    return 0
