"""Codex CLI's config.toml: trust entries for ctxd's hooks, `[features] hooks`, all else kept."""

# Codex runs a hook that is not the user's own only once config.toml holds its hash as trusted
# (codex_install.py says how it is computed); the rest of the file is the user's and is kept.

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["FEATURE", "CodexConfigError", "TomlChange", "update_config"]

FEATURE = "hooks"  # `[features] hooks` in Codex's config.toml (on by default since 0.14x)


class CodexConfigError(ValueError):
    """Codex's config.toml cannot be read or changed as ctxd needs (the message says why)."""


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
