"""The `ctxd` command line: parsers, command handlers, init, demo."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    """`ctxd`: kept here for console scripts installed as `summarizer.cli:main`."""
    from summarizer.cli.app import main as app_main

    return app_main(argv)
