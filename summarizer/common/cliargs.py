"""The state directory a command's --state-dir (or the environment) selects, and its project."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from indexer import StatePaths, resolve_state_paths


def state_paths(args: argparse.Namespace) -> StatePaths:
    """The state directory selected by --state-dir or the environment."""
    return resolve_state_paths(getattr(args, "state_dir", None))


def project_root(paths: StatePaths) -> Path:
    """The project a state directory serves: the parent of `.ctxd`, else the hook's rule."""
    if paths.root.name == ".ctxd":
        return paths.root.parent
    from indexer import git_root as _git_root

    env = os.environ.get("CLAUDE_PROJECT_DIR", "")
    return Path(env or _git_root(os.getcwd()) or os.getcwd())
