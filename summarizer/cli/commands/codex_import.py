"""`ctxd import --host codex`: which of Codex CLI's rollouts to read."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from indexer import ROLLOUT_NAME, TranscriptPathError, codex_home, rollout_files, transcript_files

__all__ = ["codex_sources"]


def codex_sources(args: argparse.Namespace, state_root: Path) -> list[Path]:
    """The rollouts to import: those named (files, or folders searched), else every one under
    $CODEX_HOME/sessions with --all, else those of the sessions run in this project."""
    if args.paths:
        found = transcript_files([Path(p) for p in args.paths], state_root)
        return [p for p in found if ROLLOUT_NAME.fullmatch(p.name)]
    home = codex_home(os.environ)
    if not (home / "sessions").is_dir():
        raise TranscriptPathError(
            f"no Codex sessions in {home / 'sessions'}; give a PATH, or set CODEX_HOME if"
            " Codex keeps its data elsewhere"
        )
    return rollout_files(home, None if args.all else state_root)
