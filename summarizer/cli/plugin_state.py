"""Whether the ctxd Claude Code plugin is enabled for a project (then it owns the hooks)."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["enabled_plugin"]


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
