"""The ctxd Claude Code plugin: whether a project enables it, and which ctxd it finds."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

__all__ = ["CTXD_VENV", "enabled_plugin", "installed_ctxd"]

# The plugin's hook finds the installed ctxd as these do (plugin/ctxd_hook/plugin.py: a copy, the
# hook imports only the standard library and its own folder; tests/ctxd_hook/test_copies.py
# checks that the two agree).
# Where the install command (and pipx, uv) put `ctxd` when PATH does not lead to it (Claude
# Code started from a desktop launcher does not see a shell profile's PATH).
CTXD_VENV = "~/.local/share/ctxd/venv"
_PLACES = (
    f"{CTXD_VENV}/bin/ctxd",
    "~/.local/share/pipx/venvs/ctxd-claude/bin/ctxd",
    "~/.local/pipx/venvs/ctxd-claude/bin/ctxd",
    "~/.local/share/uv/tools/ctxd-claude/bin/ctxd",
)


def enabled_plugin(root: Path) -> str:
    """The id of an enabled ctxd plugin (`ctxd@…`) in the user's or the project's settings."""
    for settings in (
        Path.home() / ".claude" / "settings.json",
        root / ".claude" / "settings.json",
        root / ".claude" / "settings.local.json",
    ):
        try:
            enabled = json.loads(settings.read_bytes()).get("enabledPlugins", {})
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(enabled, dict):
            for plugin_id, on in enabled.items():
                if str(plugin_id).startswith("ctxd@") and on is True:
                    return str(plugin_id)
    return ""


def installed_ctxd() -> tuple[str, str]:
    """(the `ctxd` command, its interpreter): the one on PATH, else one in the usual places;
    ("", "") if none is installed."""
    on_path = shutil.which("ctxd")
    for command in [on_path or "", *(os.path.expanduser(p) for p in _PLACES)]:
        python = _interpreter(command) if command else ""
        if python:
            return command, python
    return "", ""


def _interpreter(command: str) -> str:
    """The interpreter a console script of ctxd runs with, or "" if `command` is not one.

    Its `#!` line names it; pip writes `#!/bin/sh` and an `exec` line instead when the path
    is long or has spaces. A `ctxd` without `ctxd-hook` beside it is another program.
    """
    if not os.path.isfile(os.path.join(os.path.dirname(os.path.realpath(command)), "ctxd-hook")):
        return ""
    try:
        with open(command, "rb") as f:
            head = f.read(1024).decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    if not head or not head[0].startswith("#!"):
        return ""
    words = head[0][2:].split()
    python = words[0] if words else ""
    if python == "/bin/sh" and len(head) > 1 and head[1].startswith("'''exec' "):
        rest = head[1][len("'''exec' ") :]
        python = rest[1 : rest.find('"', 1)] if rest.startswith('"') else rest.split(" ")[0]
    return python if os.path.isabs(python) and os.access(python, os.X_OK) else ""
