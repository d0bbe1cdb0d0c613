"""`ctxd init --host codex`: ctxd's hooks in Codex CLI's hooks.json and the trust they need."""

# Codex CLI reads hooks from `hooks.json` in $CODEX_HOME (every project) or in a project's
# `.codex/` (a project Codex trusts), runs each as `$SHELL -lc "<command>"`, and runs a hook
# that is not the user's own configuration only once `[hooks.state."<file>:<event>:<group>:
# <handler>"] trusted_hash` in $CODEX_HOME/config.toml holds the hash of that hook as written;
# a hook without it is skipped without a word. So `ctxd init --host codex` writes the hooks,
# marks each one trusted (the user asked for them), turns on `[features] hooks` and says
# so; `--uninstall` takes out exactly that, and the feature flag only if ctxd turned it on.
# The hash is Codex's own (codex-rs hooks discovery: sha256 of the hook's identity as sorted,
# compact JSON), checked against @openai/codex 0.171.0 by tests/e2e/test_real_codex.py.

from __future__ import annotations

import hashlib
import json
import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from summarizer.cli.setup.hook_command import HookCommand
from summarizer.cli.setup.install import (
    InstallReport,
    MergeResult,
    Spec,
    merge_hooks,
    remove_hooks,
    rewrite_json,
)

__all__ = [
    "EVENTS",
    "codex_spec",
    "hook_line",
    "install_hooks",
    "is_ctxd_codex_handler",
    "our_trust",
    "trust_hash",
    "uninstall_hooks",
]

EVENTS: tuple[str, ...] = (
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact",
    "PostCompact", "SubagentStart", "SubagentStop", "Stop",
)  # fmt: skip
# Hooks run before a tool wait for it: ctxd listens there only for the subagent a call starts.
_MATCHERS = {"PreToolUse": "spawn_agent"}
_TIMEOUTS_S = {event: 5 for event in EVENTS} | {"SessionStart": 10}
_LABELS = {
    "PreToolUse": "pre_tool_use", "PostToolUse": "post_tool_use", "PreCompact": "pre_compact",
    "PostCompact": "post_compact", "SessionStart": "session_start",
    "UserPromptSubmit": "user_prompt_submit", "SubagentStart": "subagent_start",
    "SubagentStop": "subagent_stop", "Stop": "stop",
}  # fmt: skip
# Codex ignores the matcher of these events, and hashes them without one.
_NO_MATCHER = ("UserPromptSubmit", "Stop")
_HOST_ARGS = ("--host", "codex")


def hook_line(command: HookCommand) -> str:
    """The shell line Codex runs: `exec` the hook's argv (Codex runs hooks through
    `$SHELL -lc`; with exec no shell stays behind the hook), with `--host codex`."""
    return "exec " + shlex.join([*command.argv, *_HOST_ARGS])


def codex_spec(command: HookCommand) -> Spec:
    """The matcher groups ctxd wants per Codex event, shaped as in hooks.json."""
    line = hook_line(command)
    spec: Spec = {}
    for event in EVENTS:
        group: dict[str, Any] = {"matcher": _MATCHERS[event]} if event in _MATCHERS else {}
        group["hooks"] = [{"type": "command", "command": line, "timeout": _TIMEOUTS_S[event]}]
        spec[event] = [group]
    return spec


def is_ctxd_codex_handler(handler: dict[str, Any]) -> bool:
    """A command handler that runs ctxd's hook for Codex (`…/ctxd_hook/run_hook.py --host
    codex`, `ctxd-hook --host codex`, or `…/indexer/run_hook.py --host codex` as an earlier
    version installed it)."""
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    command = handler.get("command")
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    tail = words[-3:] if len(words) >= 3 else []
    script = tail[0].replace("\\", "/") if tail else ""
    return tuple(tail[1:]) == _HOST_ARGS and (
        script.endswith(("ctxd_hook/run_hook.py", "indexer/run_hook.py"))
        or os.path.basename(script) == "ctxd-hook"
    )


def trust_hash(event: str, matcher: str | None, handler: Mapping[str, Any]) -> str:
    """The `trusted_hash` Codex expects for one handler: sha256 of `{"event_name": <label>,
    "matcher": …, "hooks": [<handler with timeout and async set>]}` as sorted, compact JSON
    (absent fields left out, as Codex's TOML round trip drops them)."""
    normalized: dict[str, Any] = {
        "type": "command",
        "command": handler["command"],
        "timeout": max(1, int(handler.get("timeout") or 600)),
        "async": bool(handler.get("async", False)),
    }
    if isinstance(handler.get("statusMessage"), str):
        normalized["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": _LABELS[event], "hooks": [normalized]}
    if matcher is not None and event not in _NO_MATCHER:
        identity["matcher"] = matcher
    data = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(data.encode("utf-8")).hexdigest()


def our_trust(hooks_path: Path, doc: Mapping[str, Any]) -> dict[str, str]:
    """The trust entries ctxd's handlers in a hooks.json document need: state key -> hash.

    The key names the handler by its place in the file (`<file>:<event>:<group>:<handler>`),
    so a hook moved by an edit of the file needs `ctxd init --host codex` again.
    """
    found: dict[str, str] = {}
    hooks = doc.get("hooks", {}) if isinstance(doc, Mapping) else {}
    for event, groups in hooks.items() if isinstance(hooks, Mapping) else []:
        if event not in _LABELS or not isinstance(groups, list):
            continue
        for g, group in enumerate(groups):
            handlers = group.get("hooks", []) if isinstance(group, dict) else []
            for h, handler in enumerate(handlers if isinstance(handlers, list) else []):
                if is_ctxd_codex_handler(handler):
                    matcher = group.get("matcher")
                    key = f"{os.path.abspath(hooks_path)}:{_LABELS[event]}:{g}:{h}"
                    found[key] = trust_hash(event, matcher if isinstance(matcher, str) else None,
                                            handler)  # fmt: skip
    return found


def install_hooks(hooks_path: Path, command: HookCommand, *, dry_run: bool = False,
                  backup_dir: Path | None = None,
                  ) -> tuple[InstallReport, dict[str, str], set[str]]:  # fmt: skip
    """Merge ctxd's Codex hooks into `hooks_path`; return the report, the trust entries they
    need (from the file as written, or as it would be), and the hashes of ctxd's handlers the
    file held before (their entries are replaced)."""
    spec = codex_spec(command)
    seen: list[tuple[dict[str, str], MergeResult]] = []

    def change(doc: dict[str, Any]) -> MergeResult:
        _check_top_level(doc)
        before = our_trust(hooks_path, doc)
        seen.append((before, merge_hooks(doc, spec, is_ours=is_ctxd_codex_handler)))
        return seen[-1][1]

    report = rewrite_json(hooks_path, dry_run, change, backup_dir)
    before, result = seen[-1]
    return report, our_trust(hooks_path, result.settings), set(before.values())


def uninstall_hooks(hooks_path: Path, *, dry_run: bool = False, delete_if_empty: bool = False,
                    backup_dir: Path | None = None) -> tuple[InstallReport, set[str]]:  # fmt: skip
    """Remove ctxd's Codex handlers from `hooks_path` (a missing file: nothing to do); a file
    ctxd created that holds nothing else is deleted. Also returns the hashes of the handlers
    removed (their trust entries go too)."""
    seen: list[set[str]] = []

    def change(doc: dict[str, Any]) -> MergeResult:
        seen.append(set(our_trust(hooks_path, doc).values()))
        return remove_hooks(doc, is_ctxd_codex_handler)

    report = rewrite_json(hooks_path, dry_run, change, backup_dir)
    removed = seen[-1] if seen else set()
    if delete_if_empty and not dry_run and report.path.exists():
        try:
            left = json.loads(report.path.read_bytes())
        except (OSError, ValueError):
            return report, removed
        if left in ({}, {"hooks": {}}):
            report.path.unlink()
            if report.backup is not None:
                report.backup.unlink(missing_ok=True)
            return InstallReport(report.path, None, report.changes, deleted=True), removed
    return report, removed


# --- private ----------------------------------------------------------------------------------


def _check_top_level(doc: dict[str, Any]) -> None:
    from summarizer.cli.setup.install import SettingsError

    extra = sorted(set(doc) - {"hooks", "description"}) if isinstance(doc, dict) else []
    if extra:  # Codex refuses the whole file then: ctxd does not add its hooks to it
        raise SettingsError(f"Codex's hooks.json allows only `hooks` and `description`: {extra}")
