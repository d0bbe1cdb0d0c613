"""Parser of `ctxd import` (kept apart from the command so that building the parser stays light)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

AddCommand = Callable[[str, str, str], argparse.ArgumentParser]


def register(add: AddCommand) -> None:
    """Add `ctxd import` to the `ctxd` parser."""
    p = add(
        "import",
        "summarizer.cli.commands.imports:cmd_import",
        "import Claude Code transcripts (or with --host codex Codex CLI's rollouts) already on"
        " disk (only what is new since the last import)",
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="transcript files or folders (default: this project's folder under "
        "$CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects, and those of the sessions "
        "started in its subdirectories)",
    )
    p.add_argument("--all", action="store_true", help="import the transcripts of every project")
    p.add_argument(
        "--host",
        choices=("claude", "codex"),
        default="claude",
        help="whose transcripts: claude (Claude Code's, the default) or codex (Codex CLI's"
        " rollouts, $CODEX_HOME/sessions/**/rollout-*.jsonl of the sessions run in this project;"
        " with --all, every one)",
    )
    p.add_argument(
        "--prepare-worker",
        choices=("auto", "on", "off"),
        default=None,
        help="read, convert and redact lines in a second process, one batch ahead, for an "
        "import of 32 MB or more with the default batch_bytes: on, off, or auto = on when a CPU "
        "core is idle at the start (default: on if [ingest] prepare_worker = true, else auto)",
    )
