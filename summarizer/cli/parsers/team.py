"""Parser of `ctxd team …`: the team store's verbs (init, ship, status)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

AddCommand = Callable[[str, str, str], argparse.ArgumentParser]
_TARGET = "summarizer.cli.commands.team:cmd_team"


def register(add: AddCommand) -> None:
    """Add `ctxd team` and its verbs to the `ctxd` parser."""
    team = add(
        "team",
        _TARGET,
        "team memory on PostgreSQL: create its tables and roles, ship now, show how shipping"
        " stands",
    )
    verbs = team.add_subparsers(dest="verb", metavar="VERB", parser_class=type(team))
    verbs.required = True
    p = _verb(
        verbs,
        "init",
        "create or upgrade the team tables in the database of [team] dsn (or CTXD_TEAM_DSN)",
    )
    p.add_argument(
        "--roles",
        action="store_true",
        help="also create this machine's writer role and this project's reader role (needs a"
        " role that may create roles); prints their passwords once",
    )
    _verb(verbs, "ship", "ship what this machine indexed to the team store now (one pass)")
    p = _verb(
        verbs,
        "status",
        "show what waits to be shipped, the last shipment and error, and the server's counts",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def _verb(verbs: argparse._SubParsersAction, name: str, help_text: str) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    p: argparse.ArgumentParser = verbs.add_parser(name, help=help_text, description=help_text)
    p.add_argument(
        "--state-dir",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="state directory (default as for every ctxd command)",
    )
    return p
