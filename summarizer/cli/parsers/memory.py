"""Parsers of the memory commands (`emit`, `inject`, `compact`); handlers live in their modules."""

from __future__ import annotations

import argparse
from collections.abc import Callable

AddCommand = Callable[[str, str, str], argparse.ArgumentParser]


def _positive(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number of tokens such as 2000, got {value!r}"
        ) from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of tokens, got {value}")
    return n


def register(add: AddCommand) -> None:
    """Add the memory subcommands to the `ctxd` parser."""
    p = add(
        "emit",
        "summarizer.cli.commands.emit:cmd_emit",
        "record an explicit decision, failure, constraint or feature event",
    )
    p.add_argument(
        "kind",
        choices=("decision", "failure", "constraint", "feature-start", "feature-complete"),
        help="what to record",
    )
    p.add_argument(
        "text",
        nargs="*",
        help="decision / failure / constraint text; for feature-start and feature-complete, "
        "the feature id",
    )
    p.add_argument(
        "--feature-id", help="the feature the decision, failure or constraint belongs to"
    )
    p.add_argument("--id", help="a stable id (default: derived from the text)")
    p.add_argument(
        "--session",
        help="session id (default: $CTXD_SESSION_ID; inside Claude Code the current session;"
        " else the ctxd-project-notes stream)",
    )
    p.add_argument("--rationale", help="decision: why")
    p.add_argument("--prevention", help="failure: how to avoid it next time")
    p.add_argument("--command", help="failure: the command that failed")
    p.add_argument("--error", help="failure: the error message")
    p.add_argument("--resolved", action="store_true", help="failure: it is already fixed")
    p.add_argument(
        "--revoke", metavar="ID", help="constraint: revoke the constraint with this id or text"
    )
    p.add_argument("--name", help="feature: its name")
    p.add_argument("--category", help="feature: its category")
    p.add_argument(
        "--status",
        help="feature: status (default in_progress / completed; failed records a failure)",
    )
    p.add_argument("--started-at", metavar="MS", help="feature: start time, ms since the epoch")
    p.add_argument("--completed-at", metavar="MS", help="feature: end time, ms since the epoch")

    p = add(
        "inject",
        "summarizer.cli.commands.inject:cmd_inject",
        "print the orchestrator's context injection (summary, decisions, failures, constraints)",
    )
    p.add_argument("--feature-id", help="rank this feature's items first")
    p.add_argument(
        "--budget",
        type=_positive,
        default=None,
        help="token budget (default [summarizer] injection_budget)",
    )
    p.add_argument(
        "--format",
        choices=("json", "markdown"),
        default="json",
        help="output format (default json)",
    )

    add(
        "compact",
        "summarizer.cli.commands.compact:cmd_compact",
        "compact new events into the memory and rewrite the context files now",
    )
