"""Parsers of `ctxd search` and `ctxd mcp` (apart, so that building the parser loads no sqlite3)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

AddCommand = Callable[[str, str, str], argparse.ArgumentParser]
# The kinds of hit; equal to indexer.search.index.KINDS (checked by the tests).
KINDS = ("prompt", "tool", "error", "decision", "constraint", "failure", "summary", "agent")
DEFAULT_LIMIT = 10


def register(add: AddCommand) -> None:
    """Add `search` and `mcp` to the `ctxd` parser."""
    p = add(
        "search",
        "summarizer.cli.commands.search:cmd_search",
        "search prompts, commands, errors, agent work, decisions and failures of every session",
    )
    p.add_argument("query", nargs="+", help="words to find (all of them); word* finds a prefix")
    p.add_argument("--session", metavar="S", help="only this session (its id or a prefix)")
    p.add_argument("--agent", metavar="A", help="only this agent ('main' is the orchestrator)")
    p.add_argument(
        "--kind", action="append", choices=KINDS, help="only this kind of hit (repeatable)"
    )
    p.add_argument(
        "--since", metavar="DATE", help="only hits from DATE on (YYYY-MM-DD[THH:MM], UTC)"
    )
    p.add_argument(
        "--limit", type=int, default=DEFAULT_LIMIT, metavar="N",
        help=f"at most N hits, 1-100 (default {DEFAULT_LIMIT})",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument(
        "--team",
        action="store_true",
        help="search the team store: every machine of this project, with machine and user",
    )

    add(
        "mcp",
        "summarizer.cli.commands.mcp:cmd_mcp",
        "serve search and memory tools to Claude Code over MCP (stdio)",
    )
