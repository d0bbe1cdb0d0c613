"""What every command gets before it runs: a refusal without state, progress when slow."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from indexer import CtxdError
from summarizer.common.cliargs import state_paths

__all__ = ["NEEDS_STATE", "NoStateError", "run_guarded"]

# Commands that only read or fold what was captured: without a state directory there is
# nothing to show, and creating one here would hide that the hooks write somewhere else.
NEEDS_STATE = frozenset(
    {
        "status", "sessions", "agents", "read", "resume", "view", "inject",
        "compact", "ingest", "rebuild", "forget",
    }
)  # fmt: skip
# Commands that may catch the index up first, which can take seconds on a large backlog.
CATCHES_UP = frozenset(
    {"sessions", "agents", "read", "resume", "view", "inject", "compact", "ingest", "rebuild"}
)


class NoStateError(CtxdError):
    """A read command in a directory where ctxd never recorded anything."""


def run_guarded(
    name: str, handler: Callable[[argparse.Namespace], int], args: argparse.Namespace
) -> int:
    """Run `handler` for command `name`, refusing to start from nothing and showing progress."""
    if name not in NEEDS_STATE:
        return handler(args)
    paths = state_paths(args)
    if not paths.root.is_dir():
        raise NoStateError(
            f"no ctxd state in {paths.root}: run `ctxd init` in your project first, "
            "or pass --state-dir DIR (or set CTXD_HOME) to read another one"
        )
    if name not in CATCHES_UP:
        return handler(args)
    from summarizer.cli.terminal.progress import CatchUpProgress

    with CatchUpProgress(paths, name):
        return handler(args)
