"""`ctxd doctor`'s check of the recall at the moment of action: its hooks match the switch."""

from __future__ import annotations

import json
from pathlib import Path

from indexer import Config
from summarizer.cli.setup.hook_command import is_ctxd_handler

__all__ = ["recall_check"]

_RECALL_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit", "Bash")


def recall_check(settings: list[Path], config: Config) -> tuple[str, str, str, str]:
    """(status, name, detail, fix): with `[resume] recall_on_action` on, ctxd's PreToolUse hook
    must match the tools it recalls for (an install of an earlier version matched Agent|Task)."""
    matchers = [m for path in settings for m in _pre_tool_use_matchers(path)]
    if not matchers:
        return "OK", "recall", "no PreToolUse hook of ctxd's in these settings", ""
    wide = any(all(t in m.split("|") for t in _RECALL_TOOLS) or m in ("", "*") for m in matchers)
    if not config.resume.recall_on_action:
        detail = "off ([resume] recall_on_action)"
        if wide:
            detail += "; PreToolUse still runs before edits and commands, to no use"
            return "WARN", "recall", detail, "run `ctxd init` again to narrow its matcher"
        return "OK", "recall", detail, ""
    if not wide:
        return ("WARN", "recall",
                f"on, but ctxd's PreToolUse hook matches only {matchers[0]!r}: nothing is "
                "recalled before edits and commands", "run `ctxd init` again")  # fmt: skip
    return "OK", "recall", "on: PreToolUse recalls before edits and commands", ""


def _pre_tool_use_matchers(path: Path) -> list[str]:
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return []
    hooks = doc.get("hooks") if isinstance(doc, dict) else None
    groups = hooks.get("PreToolUse") if isinstance(hooks, dict) else None
    out = []
    for group in groups if isinstance(groups, list) else []:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if any(isinstance(h, dict) and is_ctxd_handler(h) for h in handlers or []):
            matcher = group.get("matcher")
            out.append(matcher if isinstance(matcher, str) else "")
    return out
