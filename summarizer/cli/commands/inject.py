"""`ctxd inject`: the kept injection when the memory is current, else catch up and compute.

The common case (nothing new since the last compaction) imports neither tiktoken nor the
ingest code: see summarizer.memory.inject_cache.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from summarizer.common.cliargs import state_paths
from summarizer.memory.inject_cache import (
    cache_key,
    cached_injection,
    current_watermark,
    read_config_bytes,
    render_injection,
)

__all__ = ["cmd_inject"]


def cmd_inject(args: argparse.Namespace) -> int:
    """Handler of `ctxd inject`: print the injection, computing it only when the memory moved."""
    paths = state_paths(args)
    key = cache_key(read_config_bytes(paths), args.feature_id, args.budget)
    watermark = current_watermark(paths) if paths.root.is_dir() else None
    injection: dict[str, Any] | None = None
    if watermark is not None:
        injection = cached_injection(paths, key, watermark)
    if injection is None:
        from summarizer.memory.inject import injection_for_cli  # tiktoken and the catch-up code
        from summarizer.resume.writer import refresh_after_compaction

        injection = injection_for_cli(
            paths, args.feature_id, args.budget, key, after_compaction=[refresh_after_compaction]
        )
    if args.format == "markdown":
        if injection["tokenCount"]:
            sys.stdout.write(render_injection(injection).strip("\n") + "\n")
    else:
        json.dump(injection, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    return 0
