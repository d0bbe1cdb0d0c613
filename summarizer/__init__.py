"""ctxd's read path: token budgets, memory of decisions/failures/constraints, injection, resume.

Exports are resolved lazily so the CLI's fast commands do not load tiktoken or the scheduler.
"""

from __future__ import annotations

import importlib

# The SessionStart hook imports this package; `typing` would cost it ~15 ms (typing, re,
# collections). Type checkers treat this constant as `typing.TYPE_CHECKING`.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from summarizer.agent import ContextAgent

_EXPORTS = {"ContextAgent": "summarizer.agent"}

__all__ = ["ContextAgent"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'summarizer' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
