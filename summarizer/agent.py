"""`summarizer.ContextAgent`: memory's ContextAgent whose compactions refresh the resume states."""

from __future__ import annotations

import os
from collections.abc import Sequence

from summarizer.memory import inject
from summarizer.memory.hooks import AfterCompaction
from summarizer.resume.writer import refresh_after_compaction

__all__ = ["ContextAgent"]


class ContextAgent(inject.ContextAgent):
    """Seed 004's Context Agent for orchestrators (see summarizer.memory.inject.ContextAgent).

    A compaction it runs in process (no daemon running) also refreshes the resume states of
    the project's recently active sessions, as the daemon's and `ctxd compact`'s do.
    """

    def __init__(
        self,
        project_root: str | os.PathLike[str] = ".",
        *,
        state_dir: str | os.PathLike[str] | None = None,
        refresh: bool = True,
        after_compaction: Sequence[AfterCompaction] = (refresh_after_compaction,),
    ) -> None:
        super().__init__(
            project_root, state_dir=state_dir, refresh=refresh, after_compaction=after_compaction
        )
