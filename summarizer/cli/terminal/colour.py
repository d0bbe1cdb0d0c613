"""Colour on a terminal only: none when the stream is piped, `NO_COLOR` is set or TERM=dumb."""

from __future__ import annotations

import os
import sys
from typing import TextIO

__all__ = ["error_word", "paint", "use_colour"]

_CODES = {"red": "31", "green": "32", "yellow": "33", "bold": "1", "dim": "2"}


def use_colour(stream: TextIO) -> bool:
    """True if `stream` is a terminal and the user did not turn colour off (no-color.org)."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def paint(text: str, style: str, stream: TextIO | None = None) -> str:
    """`text` in `style` (red, green, yellow, bold, dim) if `stream` (stdout) shows colour."""
    if not use_colour(stream or sys.stdout):
        return text
    return f"\033[{_CODES[style]}m{text}\033[0m"


def error_word() -> str:
    """The "error:" of a one-line error on stderr."""
    return paint("error:", "red", sys.stderr)
