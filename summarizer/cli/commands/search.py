"""`ctxd search`: find prompts, commands, errors, agent work and memory across sessions."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from summarizer.cli.commands.readonly_state import note_unindexed
from summarizer.common.cliargs import state_paths
from summarizer.search.service import Filters, current_connection, search, validate

__all__ = ["cmd_search"]


def cmd_search(args: argparse.Namespace) -> int:
    """Print the best hits, best first (exit 0 with no hits too)."""
    paths = state_paths(args)
    filters = Filters(
        session=args.session,
        agent=args.agent,
        kinds=tuple(args.kind or ()),
        since=args.since,
        limit=args.limit,
    )
    text = " ".join(args.query)
    color = not args.json and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    mark = ("\033[1m", "\033[0m") if color else ("**", "**")
    validate(text, filters)  # before any catch-up: a typo costs nothing
    if args.team:
        return _team_search(args, text, filters, mark)
    conn = current_connection(
        paths, on_read_only=lambda reason: note_unindexed("search", paths, reason)
    )
    hits = []
    if conn is not None:
        try:
            hits = search(conn, text, filters, mark=mark)
        finally:
            conn.close()
    return _print_hits(args, hits, f"no matches for {text!r}", lambda h: "")


def _team_search(
    args: argparse.Namespace, text: str, filters: Filters, mark: tuple[str, str]
) -> int:
    """The team store's hits: every machine of this project, with machine and user."""
    import time

    from indexer import load_config
    from summarizer.team.reader import open_team
    from summarizer.team.search import search as team_search

    paths = state_paths(args)
    conn, project = open_team(paths, load_config(paths.config))
    try:
        hits = team_search(conn, project, text, filters, now_ns=time.time_ns(), mark=mark)
    finally:
        conn.close()
    nothing = f"no matches for {text!r} in the team store (project {project})"
    return _print_hits(args, hits, nothing, lambda h: f"  {h.user}@{h.machine}")


def _print_hits(
    args: argparse.Namespace, hits: Sequence[Any], nothing: str, where: Callable[[Any], str]
) -> int:
    """The hits as JSON (`--json`) or one line each with its snippet below; `where` adds to a
    hit's line (who and which machine, for the team store's)."""
    if args.json:
        print(json.dumps([h.to_dict() for h in hits], indent=2, ensure_ascii=False))
        return 0
    if not hits:
        print(nothing, file=sys.stderr)
        return 0
    for h in hits:
        snippet = " ".join(h.snippet.split())
        line = f"{h.time}  {h.kind:<10} {h.session_id[:8]}  {h.agent_id or '-'}{where(h)}"
        print(f"{line}\n    {snippet}")
    return 0
