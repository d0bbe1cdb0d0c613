"""`ctxd` command line: a thin shell over the libraries; one-line errors, non-zero exits."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

# Each subcommand names "module:function"; modules are imported only when their command runs,
# so `ctxd read` does not pay for tiktoken, watchdog or APScheduler.
Handler = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors that say how to get help."""

    def error(self, message: str) -> NoReturn:
        message = message.replace("the following arguments are required: ", "missing ")
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--state-dir",
        metavar="DIR",
        help="state directory (default: $CTXD_HOME, else <project>/.ctxd where project is "
        "$CLAUDE_PROJECT_DIR, else the git root of the current directory, else it)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The full `ctxd` parser (also used by the docs test)."""
    parser = _Parser(
        prog="ctxd",
        description="Context daemon for Claude Code: capture hook events, index them per "
        "session and agent, and hand back compact context.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    def add(name: str, target: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        _add_common(p)
        p.set_defaults(target=target)
        return p

    p = add(
        "demo",
        "summarizer.cli.demo:cmd_demo",
        "replay a recorded multi-agent session into a temporary project and show the result",
    )
    p.add_argument(
        "--keep", action="store_true", help="keep the temporary project and print its path"
    )

    add(
        "run",
        "summarizer.daemon.service:cmd_run",
        "run the daemon in the foreground (ingest, views, scheduled jobs)",
    )
    add(
        "ingest",
        "summarizer.cli.index:cmd_ingest",
        "index everything in the spool now (one catch-up pass)",
    )
    p = add(
        "status", "summarizer.cli.status:cmd_status", "show daemon, spool lag and index counts"
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    add(
        "rebuild",
        "summarizer.cli.index:cmd_rebuild",
        "regenerate every per-agent view and the search index from the index",
    )
    from summarizer.cli import parse_import

    parse_import.register(add)

    p = add(
        "read",
        "summarizer.cli.read:cmd_read",
        "print one agent's recent history",
    )
    p.add_argument("--agent-id", help="agent instance id (required; 'main' is the orchestrator)")
    p.add_argument(
        "--lines", type=int, default=50, help="number of recent entries, 1-1000 (default 50)"
    )
    p.add_argument(
        "--session", help="session id (default: the latest session containing the agent)"
    )
    p.add_argument(
        "--format", choices=("json", "text"), default="json", help="output format (default json)"
    )
    p.add_argument("--include-metadata", action="store_true", help="include file metadata")
    from summarizer.cli import parse_memory as cli_memory
    from summarizer.cli import parse_search as cli_search
    from summarizer.cli import parse_sessions as cli_sessions
    from summarizer.cli import parse_task as cli_task
    from summarizer.cli import view as cli_view

    cli_memory.register(add)
    cli_sessions.register(add)
    cli_task.register(add)
    cli_view.register(add)
    cli_search.register(add)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `ctxd`."""
    parser = build_parser()
    args = parser.parse_args(argv)
    module_name, func_name = str(args.target).split(":")
    try:
        handler: Handler = getattr(importlib.import_module(module_name), func_name)
        return handler(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # the CLI edge: one line, non-zero exit, never a traceback
        from indexer.errors import CtxdError

        if isinstance(e, CtxdError):
            print(f"ctxd {args.command}: error: {e}", file=sys.stderr)
            return 1
        print(
            f"ctxd {args.command}: internal error: {type(e).__name__}: {e} "
            "(please report it; your data is safe in the spool)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
