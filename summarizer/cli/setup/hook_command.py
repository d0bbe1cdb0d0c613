"""The hook command `ctxd init` installs, and which settings handlers run ctxd's hook.

A handler is ctxd's by the entry point it runs (Claude Code validates settings, so an extra
key could get the whole file rejected): this version's launcher, the `ctxd-hook` console
script, or what an earlier version installed.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from indexer import EARLIER_HOOK_ENTRY_POINTS, EARLIER_HOOK_MODULE
from summarizer.common.programs import hook_launcher

__all__ = [
    "EARLIER_ENTRY_POINTS",
    "ENTRY_POINTS",
    "HookCommand",
    "default_hook_command",
    "handler_entry_point",
    "is_ctxd_handler",
]


@dataclass(frozen=True)
class HookCommand:
    """The hook's argv, run in exec form (no shell, so no shell-profile noise on stdout)."""

    argv: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.argv or not all(isinstance(a, str) and a for a in self.argv):
            raise ValueError(f"hook argv must be non-empty strings, got {self.argv!r}")
        program = self.argv[0]
        # A bare name (`ctxd-hook`) is looked up on PATH: the portable form for shared settings.
        if not (os.path.isabs(program) or program.startswith("${CLAUDE_") or "/" not in program):
            raise ValueError(f"hook program must be an absolute path or a name, got {program!r}")


def default_hook_command() -> HookCommand:
    """This interpreter running `ctxd_hook/run_hook.py` (`-I -S`: no site, fast start; the hook
    itself is then imported from its cached bytecode)."""
    # abspath, not resolve: the venv's python symlink is what identifies the installation.
    return HookCommand((os.path.abspath(sys.executable), "-I", "-S", hook_launcher()))


def is_ctxd_handler(handler: dict[str, Any]) -> bool:
    """True for a command handler that runs ctxd-hook, `…/ctxd_hook/run_hook.py`, or what
    earlier versions installed (`…/indexer/run_hook.py`, `…/indexer/hook.py`, `-m indexer.hook`).

    The entry point is the marker: Claude Code validates settings, so an extra key could get
    the whole file rejected, and a `statusMessage` would show in the user's spinner.
    """
    return bool(handler_entry_point(handler))


def handler_entry_point(handler: dict[str, Any]) -> str:
    """Which of ctxd's entry points a command handler runs (one of ENTRY_POINTS, or
    `-m indexer.hook`); "" if none."""
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return ""
    command, args = handler.get("command"), handler.get("args")
    words: list[str] = []
    if isinstance(command, str) and command.strip():
        words.append(command.split()[-1])  # shell form: the script is the last word
    if isinstance(args, list) and args and all(isinstance(a, str) for a in args):
        words.append(args[-1])
        if any(args[i : i + 2] == ["-m", EARLIER_HOOK_MODULE] for i in range(len(args))):
            return f"-m {EARLIER_HOOK_MODULE}"
    return next((e for w in words if (e := _entry_point(w))), "")


# What ctxd installs, then what earlier versions installed: the launcher when it lived in the
# indexer package, and before it the hook run as a script. Both still record (stand-ins at
# those paths run the hook from its new place); `ctxd init` replaces them, `ctxd doctor` warns.
EARLIER_ENTRY_POINTS = EARLIER_HOOK_ENTRY_POINTS


ENTRY_POINTS = ("ctxd-hook", "ctxd_hook/run_hook.py", *EARLIER_ENTRY_POINTS[:2])


def _entry_point(word: str) -> str:
    w = word.strip("'\"").replace("\\", "/")
    return next((s for s in ENTRY_POINTS if w == s or w.endswith("/" + s)), "")
