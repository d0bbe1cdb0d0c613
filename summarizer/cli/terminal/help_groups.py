"""`ctxd --help`: the commands grouped by what people do with them, in the order they need them."""

from __future__ import annotations

import argparse

__all__ = ["GROUPS", "grouped_commands"]

GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("set up", ("demo", "init", "import", "start", "stop", "doctor", "team")),
    ("look", ("status", "sessions", "agents", "search", "read", "resume", "view")),
    ("memory", ("inject", "emit", "compact", "task", "forget")),
    ("maintenance", ("ingest", "rebuild", "run", "mcp")),
)


def grouped_commands(parser: argparse.ArgumentParser) -> str:
    """The command list of `ctxd --help`, one heading per group; unlisted commands go last."""
    helps: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._get_subactions():
                helps[choice.dest] = choice.help or ""
    width = max(len(name) for name in helps) + 2
    listed = {name for _, names in GROUPS for name in names}
    groups = [*GROUPS, ("other", tuple(sorted(set(helps) - listed)))]
    out: list[str] = []
    for title, names in groups:
        present = [n for n in names if n in helps]
        if not present:
            continue
        out.append(f"{title}:")
        out += [f"  {name:<{width}}{helps[name]}" for name in present]
        out.append("")
    return "\n".join(out)
