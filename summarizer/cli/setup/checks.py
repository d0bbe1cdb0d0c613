"""One `ctxd doctor` check's result: status, what was found, and how to fix it."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Check"]


@dataclass(frozen=True)
class Check:
    """One `ctxd doctor` line: status OK, WARN or FAIL, what was found, and how to fix it."""

    status: str
    name: str
    detail: str
    fix: str = ""
