"""Parsers of the session commands (`sessions`, `resume`, `init`, `start`, `stop`, `doctor`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

AddCommand = Callable[[str, str, str], argparse.ArgumentParser]


def register(add: AddCommand) -> None:
    """Add the session and integration subcommands to the `ctxd` parser."""
