"""Helpers of the daemon tests: the whole hook corpus in one spool segment, and what the
session duties wrote."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from helpers import CORPUS

from ctxd_hook.hook import build_line
from indexer.config import Config
from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up

HOOKS = CORPUS / "hooks"
T0 = 1_790_000_000_000_000_000
# Written at build time, so they differ between two builds of the same state.
_CLOCK_KEYS = {"created_at", "created_ns"}
_CLOCK_TEXT = re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")


def spooled_corpus(root: Path) -> StatePaths:
    """Every corpus hook payload in file order in one spool segment, not indexed yet."""
    paths = StatePaths(root)
    paths.ensure()
    lines = []
    for path in sorted(HOOKS.rglob("*.jsonl")):
        for raw in path.read_bytes().splitlines():
            if raw.strip():
                lines.append(build_line(raw, T0 + len(lines), 4242))
    (paths.spool / "20260101T00.jsonl").write_bytes(b"".join(lines))
    return paths


def indexed_corpus(root: Path) -> StatePaths:
    """The spooled corpus indexed (no session duties run yet)."""
    paths = spooled_corpus(root)
    catch_up(paths, Config())
    return paths


def duty_outputs(paths: StatePaths) -> dict[str, Any]:
    """Every file the session duties wrote, JSON without its build-time clock fields."""
    found: dict[str, Any] = {}
    for folder in (paths.sessions, paths.root / "resume", paths.root / "handoff"):
        for p in sorted(folder.rglob("*")) if folder.is_dir() else []:
            if not p.is_file() or p.suffix == ".jsonl":
                continue  # the views are the ingest's, not the duties'
            data = p.read_bytes()
            if p.suffix == ".json":
                loaded = json.loads(data)
                if isinstance(loaded, dict):
                    loaded = {k: v for k, v in loaded.items() if k not in _CLOCK_KEYS}
                found[str(p.relative_to(paths.root))] = loaded
            else:
                found[str(p.relative_to(paths.root))] = _CLOCK_TEXT.sub(b"<now>", data)
    return found
