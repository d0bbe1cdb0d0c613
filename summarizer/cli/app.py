"""`ctxd` command line: a thin shell over the libraries; one-line errors, non-zero exits."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import ClassVar, NoReturn

# Each subcommand names "module:function"; modules are imported only when their command runs,
# so `ctxd read` does not pay for tiktoken, watchdog or APScheduler.
DISTRIBUTION = "ctxd-claude"  # installed from a checkout (`ctxd` on PyPI is another project)
Handler = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors that say how to get help."""

    argv: ClassVar[list[str]] = []  # what main() parses, for the did-you-mean of an unknown option

    def error(self, message: str) -> NoReturn:
        from summarizer.cli.terminal.suggest import with_suggestion

        required = "the following arguments are required: "
        if message.startswith(required):
            names = message[len(required) :]
            message = f"{names} {'are' if ',' in names else 'is'} required"
        message, prog = with_suggestion(self, message, _Parser.argv)
        self.exit(2, f"{prog}: error: {message} (see `{prog} --help`)\n")


class _TopParser(_Parser):
    """The `ctxd` parser: its help lists the commands by what people do with them."""

    def format_help(self) -> str:
        from summarizer.cli.terminal.help_groups import grouped_commands

        text = super().format_help()
        start, end = text.find("positional arguments:"), text.find("options:")
        if start < 0 or end < 0:
            return text
        return text[:start] + grouped_commands(self) + "\n" + text[end:]


class _VersionAction(argparse.Action):
    """`--version`: reads the package metadata only when asked. Read for every command, it
    made `ctxd status` and `ctxd inject` ~1.4x slower (email, zipfile, csv and socket with it)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(
            option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version"
        )

    def __call__(self, parser: argparse.ArgumentParser, *_args: object) -> NoReturn:
        sys.stdout.write(f"ctxd {_version()}\n")
        parser.exit(0)


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--state-dir",
        metavar="DIR",
        help="state directory (default: $CTXD_HOME, else <project>/.ctxd where project is "
        "$CLAUDE_PROJECT_DIR, else the git root of the current directory, else it; in a git "
        "repository, the nearest folder from there up to its root that has a .ctxd)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The full `ctxd` parser (also used by the docs test)."""
    parser = _TopParser(
        prog="ctxd",
        description="Context daemon for Claude Code: capture hook events, index them per "
        "session and agent, and hand back compact context.",
        epilog="Run `ctxd COMMAND --help` for the options of a command.",
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    def add(name: str, target: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        _add_common(p)
        p.set_defaults(target=target, command_name=name)
        return p

    p = add(
        "demo",
        "summarizer.cli.commands.demo:cmd_demo",
        "replay a recorded multi-agent session into a temporary project and show the result",
    )
    p.add_argument(
        "--keep", action="store_true", help="keep the temporary project and print its path"
    )
    # The demo makes its own temporary project: its --state-dir exists only to be refused.
    for action in p._actions:
        if "--state-dir" in action.option_strings:
            action.help = argparse.SUPPRESS

    add(
        "run",
        "summarizer.daemon.run:cmd_run",
        "run the daemon in the foreground (ingest, views, scheduled jobs)",
    )
    add(
        "ingest",
        "summarizer.cli.commands.index:cmd_ingest",
        "index everything in the spool now (one catch-up pass)",
    )
    p = add(
        "status",
        "summarizer.cli.commands.status:cmd_status",
        "show daemon, spool lag and index counts",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    add(
        "rebuild",
        "summarizer.cli.commands.index:cmd_rebuild",
        "regenerate every per-agent view and the search index from the index",
    )
    from summarizer.cli.parsers import imports as parse_import

    parse_import.register(add)

    p = add(
        "read",
        "summarizer.cli.commands.read:cmd_read",
        "print one agent's recent history",
    )
    p.add_argument(
        "--agent-id", required=True, help="agent instance id ('main' is the orchestrator)"
    )
    p.add_argument(
        "--lines", type=int, default=50, help="number of recent entries, 1-1000 (default 50)"
    )
    p.add_argument(
        "--session",
        help="the session: its id, a unique prefix or its start stamp (default: the latest "
        "session containing the agent)",
    )
    p.add_argument(
        "--format", choices=("json", "text"), default="json", help="output format (default json)"
    )
    p.add_argument("--include-metadata", action="store_true", help="include file metadata")
    from summarizer.cli.commands import view as cli_view
    from summarizer.cli.parsers import memory as cli_memory
    from summarizer.cli.parsers import search as cli_search
    from summarizer.cli.parsers import sessions as cli_sessions
    from summarizer.cli.parsers import task as cli_task
    from summarizer.cli.parsers import team as cli_team

    cli_memory.register(add)
    cli_sessions.register(add)
    cli_task.register(add)
    cli_view.register(add)
    cli_search.register(add)
    cli_team.register(add)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # run from a checkout that was not installed
        import tomllib
        from pathlib import Path

        try:
            pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
            return str(tomllib.loads(pyproject.read_text())["project"]["version"])
        except (OSError, KeyError, ValueError):
            return "(unknown version)"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `ctxd`."""
    parser = build_parser()
    _Parser.argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    module_name, func_name = str(args.target).split(":")
    name = args.command_name
    try:
        from indexer import redact_last_resort
        from summarizer.cli.commands.guard import run_guarded

        redact_last_resort()  # what a command logs may quote an event

        handler: Handler = getattr(importlib.import_module(module_name), func_name)
        return run_guarded(name, handler, args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # the CLI edge: one line, non-zero exit, never a traceback
        from indexer import CtxdError
        from summarizer.cli.terminal.colour import error_word

        if isinstance(e, CtxdError):
            print(f"ctxd {name}: {error_word()} {e}", file=sys.stderr)
            return 1
        from indexer import bounded, redact_text

        print(  # redacted and bounded: the error may quote an event
            f"ctxd {name}: internal error: {type(e).__name__}: {bounded(redact_text(str(e)), 500)} "
            "(please report it; your data is safe in the spool)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
