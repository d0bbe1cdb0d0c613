"""ctxd's own programs run as separate processes: the `ctxd` command and the hook's launcher.

Running the command (`python -m summarizer.cli.app …`: the daemon's autostart, the demo's
steps, the MCP server Claude Code starts) uses its public command line, not its code, so any
layer may do it; the module is named here once. The hook's launcher is found, not imported: the
hook sits above everything else in ctxd's order of layers, and only its path is wanted.
"""

from __future__ import annotations

import importlib.util
import os
import sys

__all__ = ["COMMAND_MODULE", "command_argv", "hook_launcher"]

COMMAND_MODULE = "summarizer.cli.app"


def command_argv(*args: str) -> list[str]:
    """`ctxd <args>` run by this interpreter (the installation it belongs to)."""
    return [sys.executable, "-m", COMMAND_MODULE, *args]


def hook_launcher() -> str:
    """The hook's launcher of this installation, `…/ctxd_hook/run_hook.py`."""
    found = importlib.util.find_spec("ctxd_hook")
    folders = list(found.submodule_search_locations or []) if found is not None else []
    if not folders or not os.path.isfile(os.path.join(folders[0], "run_hook.py")):
        raise RuntimeError(
            "ctxd_hook is not installed: reinstall ctxd from its checkout "
            f"({sys.executable} -m pip install --force-reinstall /path/to/your/ctxd/checkout)"
        )
    return os.path.abspath(os.path.join(folders[0], "run_hook.py"))
