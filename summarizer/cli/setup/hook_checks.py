"""`ctxd doctor`'s check of ctxd's Claude Code hooks: in the settings files, or the plugin's."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from indexer import StatePaths
from summarizer.cli.setup.checks import Check
from summarizer.cli.setup.plugin_state import enabled_plugin
from summarizer.common.cliargs import project_root

__all__ = ["check_hooks", "settings_files"]


def settings_files(paths: StatePaths) -> list[Path]:
    """The Claude Code settings files that may hold ctxd's hooks for this project."""
    root = project_root(paths)
    return [
        root / ".claude" / "settings.json",
        root / ".claude" / "settings.local.json",
        Path.home() / ".claude" / "settings.json",
    ]


def check_hooks(paths: StatePaths, codex: bool = False) -> Check:
    """The doctor line for ctxd's Claude Code hooks: in a settings file, or the plugin's."""
    from summarizer.cli.setup.hook_command import EARLIER_ENTRY_POINTS, handler_entry_point
    from summarizer.cli.setup.install import EVENTS

    found: dict[str, Path] = {}
    broken: list[str] = []
    older: set[str] = set()
    for path in settings_files(paths):
        try:
            doc = json.loads(path.read_bytes())
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as e:
            return Check("FAIL", "hooks", f"{path} is not readable JSON ({e})", "fix the file")
        hooks = doc.get("hooks", {}) if isinstance(doc, dict) else {}
        for event, groups in hooks.items() if isinstance(hooks, dict) else []:
            for group in groups if isinstance(groups, list) else []:
                handlers = group.get("hooks", []) if isinstance(group, dict) else []
                for h in handlers if isinstance(handlers, list) else []:
                    entry_point = handler_entry_point(h)
                    if entry_point:
                        found.setdefault(event, path)
                        broken.extend(_missing_programs(h))
                        if entry_point in EARLIER_ENTRY_POINTS:
                            older.add(entry_point)
    init = "run `ctxd init` (or `ctxd init --user` for every project)"
    plugin = enabled_plugin(project_root(paths))
    if plugin and found:
        where = ", ".join(sorted({str(p) for p in found.values()}))
        return Check(
            "WARN",
            "hooks",
            f"the Claude Code plugin {plugin} and {where} both run ctxd's hook: every event "
            "is recorded twice",
            "run `ctxd init --uninstall` to keep only the plugin",
        )
    if plugin:
        return _check_plugin(plugin)
    if not found and codex:
        return Check("OK", "hooks", "none for Claude Code (this project records Codex CLI)")
    if not found:
        return Check("FAIL", "hooks", "ctxd's hooks are not installed", init)
    if broken:
        missing = ", ".join(sorted(set(broken)))
        return Check(
            "FAIL",
            "hooks",
            f"the hook command points at {missing}, which is missing",
            f"{init} again to point the hooks at this installation",
        )
    absent = [e for e in EVENTS if e not in found]
    where = ", ".join(sorted({str(p) for p in found.values()}))
    if absent:
        return Check(
            "WARN", "hooks", f"not installed for {', '.join(absent)} (in {where})", f"{init} again"
        )
    if older:
        return Check(
            "WARN",
            "hooks",
            f"installed in {where} as an earlier version did ({', '.join(sorted(older))}: "
            "it still records, through a stand-in that runs the hook from its new place, "
            "a little slower)",
            f"{init} again to install ctxd_hook/run_hook.py",
        )
    return Check("OK", "hooks", f"all {len(EVENTS)} events installed in {where}")


def _check_plugin(plugin: str) -> Check:
    """The plugin records by itself; the rest of its work needs it to find the ctxd command."""
    from summarizer.cli.setup.plugin_state import CTXD_VENV, installed_ctxd

    command, _python = installed_ctxd()
    if command:
        return Check("OK", "hooks", f"recorded by the Claude Code plugin {plugin} (with {command})")
    this = Path(sys.executable).parent / "ctxd"
    return Check(
        "WARN",
        "hooks",
        f"recorded by the Claude Code plugin {plugin}, which finds no ctxd command on PATH or in "
        f"{CTXD_VENV}: no notes after /compact, no search tools for the model",
        f"put this one on PATH: mkdir -p ~/.local/bin && ln -sf {this} ~/.local/bin/ctxd",
    )


def _missing_programs(handler: dict[str, Any]) -> list[str]:
    """The program and script paths of a hook handler that do not exist (or cannot run)."""
    command, args = handler.get("command"), handler.get("args")
    if not isinstance(command, str):
        return []
    if isinstance(args, list) and args:
        program, rest = command, [a for a in args if isinstance(a, str)]
    else:  # shell form: "prog args…"
        words = command.split()
        program, rest = (words[0] if words else ""), words[1:]
    missing = []
    if program.startswith("${"):
        pass  # ${CLAUDE_PROJECT_DIR}/…: expanded by Claude Code, not checkable here
    elif os.path.isabs(program):
        if not os.access(program, os.X_OK):
            missing.append(program)
    elif shutil.which(program) is None:
        missing.append(program)
    missing += [a for a in rest if a.endswith(".py") and os.path.isabs(a) and not os.path.exists(a)]
    return missing
