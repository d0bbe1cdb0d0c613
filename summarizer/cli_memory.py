"""Parsers of the memory commands (`emit`, `inject`, `compact`); handlers live in their modules."""

from __future__ import annotations

import argparse
from collections.abc import Callable

AddCommand = Callable[[str, str, str], argparse.ArgumentParser]


def register(add: AddCommand) -> None:
    """Add the memory subcommands to the `ctxd` parser."""
