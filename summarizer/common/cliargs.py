"""The state directory a command's --state-dir (or the environment) selects."""

from __future__ import annotations

import argparse

from indexer.paths import StatePaths, resolve_state_paths


def state_paths(args: argparse.Namespace) -> StatePaths:
    """The state directory selected by --state-dir or the environment."""
    return resolve_state_paths(getattr(args, "state_dir", None))
