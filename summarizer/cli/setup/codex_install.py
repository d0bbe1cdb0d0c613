"""`ctxd init --host codex`: ctxd's hook in Codex CLI's hooks.json, trusted, with its feature on."""

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
from dataclasses import dataclass, field
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
    "FEATURE",
    "CodexConfigError",
    "TomlChange",
    "codex_spec",
    "hook_line",
    "install_hooks",
    "is_ctxd_codex_handler",
    "our_trust",
    "trust_hash",
    "uninstall_hooks",
    "update_config",
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
FEATURE = "hooks"  # `[features] hooks` in Codex's config.toml (on by default since 0.14x)
_HOST_ARGS = ("--host", "codex")


class CodexConfigError(ValueError):
    """Codex's config.toml cannot be read or changed as ctxd needs (the message says why)."""


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


@dataclass
class TomlChange:
    """What `update_config` changed (or would) in Codex's config.toml."""

    path: Path
    trusted: list[str] = field(default_factory=list)  # state keys given their hash
    untrusted: list[str] = field(default_factory=list)  # ctxd's entries taken out
    feature_on: bool = False  # `[features] hooks = true` was written now
    feature_off: bool = False  # ... and put back as it was
    feature_state: str = ""  # "on", "off" (the user turned it off), or "" (Codex's default)
    created: bool = False  # the file did not exist
    deleted: bool = False


def update_config(path: Path, hooks_path: Path, want: dict[str, str], stale: set[str], *,
                  feature: str = "", delete_if_empty: bool = False,
                  dry_run: bool = False) -> TomlChange:  # fmt: skip
    """Bring the trust entries of ctxd's hooks in `hooks_path` to `want` (key -> hash) in
    Codex's config.toml at `path`: an entry of that file whose hash is in `stale` (ctxd's
    handlers as they were) or `want` and whose key is not wanted goes. `feature` "on" turns
    `[features] hooks` on; "remove" takes that line out, "false" sets it back to false. Every
    other line is kept as it was; with `delete_if_empty` (ctxd created the file) a file left
    empty is deleted."""
    import tomlkit  # only `ctxd init --host codex` edits TOML
    from tomlkit.exceptions import TOMLKitError

    change = TomlChange(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text, change.created = "", True
    except (OSError, UnicodeDecodeError) as e:
        raise CodexConfigError(f"{path}: cannot read it ({e})") from None
    try:
        doc = tomlkit.parse(text)
        state = _state_table(doc, create=bool(want))
        prefix = f"{os.path.abspath(hooks_path)}:"
        ours = stale | set(want.values())
        for key in list(state or {}):
            entry = state[key]
            if key.startswith(prefix) and key not in want and isinstance(entry, dict) and (
                entry.get("trusted_hash") in ours
            ):
                _drop_trust(state, key)
                change.untrusted.append(key)
        for key, value in want.items():
            entry = state.get(key)
            if isinstance(entry, dict) and entry.get("trusted_hash") == value:
                continue
            if not isinstance(entry, dict):
                entry = tomlkit.table()
                state[key] = entry
            entry["trusted_hash"] = value
            change.trusted.append(key)
        _features(doc, feature, change)
        _prune_empty(doc)
        new = tomlkit.dumps(doc)
    except (TOMLKitError, TypeError, KeyError) as e:
        raise CodexConfigError(
            f"{path}: cannot update it ({e}); fix the file and run `ctxd init --host codex`"
            " again"
        ) from None
    if new.rstrip() == text.rstrip() or dry_run:  # what tomlkit leaves of a removed table
        return change
    if delete_if_empty and not new.strip():
        path.unlink(missing_ok=True)
        change.deleted = True
        return change
    if change.created and not new.strip():
        return change
    _write(path, new.rstrip("\n") + "\n")
    return change


# --- private ----------------------------------------------------------------------------------


def _check_top_level(doc: dict[str, Any]) -> None:
    from summarizer.cli.setup.install import SettingsError

    extra = sorted(set(doc) - {"hooks", "description"}) if isinstance(doc, dict) else []
    if extra:  # Codex refuses the whole file then: ctxd does not add its hooks to it
        raise SettingsError(f"Codex's hooks.json allows only `hooks` and `description`: {extra}")


def _state_table(doc: Any, *, create: bool) -> Any:
    import tomlkit

    hooks = doc.get("hooks")
    if hooks is None:
        if not create:
            return None
        hooks = tomlkit.table(is_super_table=True)
        doc["hooks"] = hooks
    if not isinstance(hooks, dict):
        raise TypeError("`hooks` is not a table")
    state = hooks.get("state")
    if state is None:
        if not create:
            return None
        state = tomlkit.table(is_super_table=True)
        hooks["state"] = state
    if not isinstance(state, dict):
        raise TypeError("`hooks.state` is not a table")
    return state


def _drop_trust(state: Any, key: str) -> None:
    entry = state[key]
    if set(entry) <= {"trusted_hash"}:
        del state[key]
    else:  # the user's own setting for that hook (enabled = false) stays
        del entry["trusted_hash"]


def _features(doc: Any, feature: str, change: TomlChange) -> None:
    import tomlkit

    table = doc.get("features")
    current = table.get(FEATURE) if isinstance(table, dict) else None
    change.feature_state = "on" if current is True else "off" if current is False else ""
    if feature == "on" and current is not True:
        if table is None:
            table = tomlkit.table()
            doc["features"] = table
        table[FEATURE] = True
        change.feature_on = True
    elif feature in ("remove", "false") and current is True and isinstance(table, dict):
        if feature == "false":  # as the user had it before ctxd turned it on
            table[FEATURE] = False
        else:
            del table[FEATURE]
        change.feature_off = True


def _prune_empty(doc: Any) -> None:
    hooks = doc.get("hooks")
    if isinstance(hooks, dict):
        state = hooks.get("state")
        if isinstance(state, dict) and not state:
            del hooks["state"]
        if not hooks:
            del doc["hooks"]
    features = doc.get("features")
    if isinstance(features, dict) and not features:
        del doc["features"]


def _write(requested: Path, text: str) -> None:
    from summarizer.cli.setup.install import write_private

    # Through a symlink (dotfile managers), as `ctxd init` writes Claude Code's settings.
    path = requested.resolve() if requested.is_symlink() else requested
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = (path.stat().st_mode & 0o777) if path.exists() else 0o600
    write_private(path, text.encode("utf-8"))
    os.chmod(path, mode)  # the user's own mode kept (write_private makes files 0600)
