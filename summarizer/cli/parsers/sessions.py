"""Parsers of the session commands (`sessions`, `resume`, `init`, `start`, `stop`, `doctor`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

AddCommand = Callable[[str, str, str], argparse.ArgumentParser]
DEFAULT_SESSIONS = 20  # `ctxd sessions` without --limit or --all


def register(add: AddCommand) -> None:
    """Add the session and integration subcommands to the `ctxd` parser."""
    p = add(
        "sessions", "summarizer.cli.commands.sessions:cmd_sessions", "list sessions, newest first"
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument(
        "--limit",
        type=int,
        metavar="N",
        default=DEFAULT_SESSIONS,
        help=f"show the N newest sessions (default {DEFAULT_SESSIONS})",
    )
    shown.add_argument("--all", action="store_true", help="show every session")
    p.add_argument(
        "--team",
        action="store_true",
        help="the team store's sessions: every machine of this project, with machine and user",
    )

    p = add(
        "resume",
        "summarizer.cli.commands.sessions:cmd_resume",
        "print a session's resume package: summary, open todos and failures, agents, files",
    )
    p.add_argument(
        "session",
        help="session id, a unique prefix of it, or its start stamp YYYY-MM-DD-HH-MM-SS (UTC)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument(
        "--preview",
        action="store_true",
        help="print exactly the text the next SessionStart would hand back (nothing if none),"
        " and on stderr why",
    )
    p.add_argument(
        "--source",
        choices=("resume", "compact", "clear", "startup"),
        default="resume",
        help="the SessionStart source to preview (default resume)",
    )
    p.add_argument(
        "--transcript",
        metavar="PATH",
        help="the session's transcript (Claude Code's, or Codex's rollout; default: the one its"
        " last SessionStart named)",
    )

    p = add(
        "agents",
        "summarizer.cli.commands.agents:cmd_agents",
        "list a session's agents: type, status, first instruction, events and failures",
    )
    p.add_argument("session", help="session id, a unique prefix of it, or its start stamp")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = add(
        "init",
        "summarizer.cli.setup.init:cmd_init",
        "create .ctxd/, install ctxd's hooks in .claude/settings.local.json (this machine) and"
        " its MCP server in .mcp.json; with --host codex, in Codex CLI's hooks.json",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--shared",
        action="store_true",
        help="install a portable command (`ctxd-hook` on PATH) in .claude/settings.json, the"
        " file teams commit",
    )
    where.add_argument(
        "--user", action="store_true", help="install in ~/.claude/settings.json (every project)"
    )
    p.add_argument(
        "--uninstall",
        action="store_true",
        help="stop the daemon and remove what ctxd added (hooks, the MCP server, files it created,"
        " its backups); with --host codex, Codex's hooks only (the daemon keeps running)",
    )
    p.add_argument("--dry-run", action="store_true", help="show the changes, write nothing")
    p.add_argument(
        "--host",
        choices=("claude", "codex", "all"),
        default="claude",
        help="the client whose hooks to install or remove: claude (Claude Code, the default),"
        " codex (Codex CLI: .codex/hooks.json, or $CODEX_HOME/hooks.json with --user, each hook"
        " marked trusted and the hooks feature turned on in $CODEX_HOME/config.toml), or all",
    )

    p = add(
        "forget",
        "summarizer.cli.commands.forget:cmd_forget",
        "delete a session, or everything before a date, from the spool, index, views and memory",
    )
    p.add_argument(
        "session", nargs="?", help="the whole id of the session to forget (`ctxd sessions --json`)"
    )
    p.add_argument(
        "--before",
        metavar="DATE",
        help="forget every session last active before "
        "DATE (YYYY-MM-DD or YYYY-MM-DDTHH:MM, UTC) and older spool segments",
    )

    add(
        "start", "summarizer.cli.commands.lifecycle:cmd_start", "start the daemon in the background"
    )
    p = add("stop", "summarizer.cli.commands.lifecycle:cmd_stop", "stop the running daemon")
    p.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds to wait after SIGTERM before SIGKILL (default 10)",
    )
    p = add(
        "doctor",
        "summarizer.cli.setup.doctor:cmd_doctor",
        "check hooks, state directory, daemon, spool lag, quarantine, tiktoken, compaction",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
