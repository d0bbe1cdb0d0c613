"""`ctxd init --host codex`: where ctxd's Codex hooks go, what changed, and how to undo it."""

# Like Claude Code's, the hook's command holds absolute paths of this machine: by default it
# goes to the project's `.codex/hooks.json`, which ctxd keeps out of git; `--user` puts it in
# $CODEX_HOME/hooks.json for every project. Codex reads a project's `.codex/` only when it
# trusts the project, which is the user's call: ctxd says so instead of deciding it. What ctxd
# created and whether it turned the hooks feature on are recorded in .ctxd/init-codex.json,
# so that `--uninstall` takes out exactly that.

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tomllib
from pathlib import Path

from indexer import CtxdError, StatePaths, codex_home
from summarizer.cli.setup.codex_config import CodexConfigError, TomlChange, update_config
from summarizer.cli.setup.codex_install import install_hooks, uninstall_hooks
from summarizer.cli.setup.gitignore import ensure_gitignored
from summarizer.cli.setup.hook_command import default_hook_command
from summarizer.cli.setup.install import InstallReport, SettingsError, write_private

__all__ = ["init_codex"]

_RECORD = "init-codex.json"
_IGNORED = ".codex/hooks.json"


class CodexInitError(CtxdError):
    """`ctxd init --host codex` cannot read or change one of Codex's files."""


def init_codex(args: argparse.Namespace, paths: StatePaths, root: Path) -> int:
    """Install (or with `--uninstall` remove) ctxd's hooks for Codex CLI and say what changed."""
    home = codex_home(os.environ)
    hooks_path = (home if args.user else root / ".codex") / "hooks.json"
    config = home / "config.toml"
    try:
        if args.uninstall:
            return _uninstall(paths, hooks_path, config, args.dry_run)
        if args.shared:
            raise CodexInitError(
                "--shared is for Claude Code: Codex runs a hook only once it is trusted on each"
                " machine; use `ctxd init --host codex` (this project) or `--user`"
            )
        if not args.user and _tracked(root, _IGNORED):
            raise CodexInitError(
                f"{root / _IGNORED} is in git: ctxd's hook holds paths of this machine; use"
                " `ctxd init --host codex --user` to install it for your account instead"
            )
        if not args.dry_run:
            new = [p for p in (hooks_path.parent, hooks_path, config) if not p.exists()]
            _remember(paths, created=[str(p) for p in new])
        report, want, before = install_hooks(
            hooks_path, default_hook_command(), dry_run=args.dry_run, backup_dir=_backups(paths)
        )
        _show(report, args.dry_run)
        change = update_config(config, hooks_path, want, before, feature="on",
                               dry_run=args.dry_run)  # fmt: skip
    except (SettingsError, CodexConfigError) as e:
        raise CodexInitError(str(e)) from None
    _show_config(change, len(want), args.dry_run)
    if args.dry_run:
        return 0
    if change.feature_on:
        _remember(paths, feature=str(config), feature_was=change.feature_state)
    if not args.user:
        if _created(paths, hooks_path) and ensure_gitignored(root, _IGNORED):
            print(f"added {_IGNORED} to {root / '.gitignore'} (paths of this machine)")
        if not _trusted_project(config, root):
            print(
                f"note: Codex reads {hooks_path.parent} only in a project it trusts: answer"
                " yes when Codex asks whether to trust this folder (or run `codex exec --trust`"
                " once here), or install with `ctxd init --host codex --user` instead"
            )
    return 0


def _uninstall(paths: StatePaths, hooks_path: Path, config: Path, dry_run: bool) -> int:
    report, removed = uninstall_hooks(
        hooks_path, dry_run=dry_run, delete_if_empty=_created(paths, hooks_path),
        backup_dir=_backups(paths),
    )  # fmt: skip
    _show(report, dry_run)
    record = _record(paths)
    feature = ""
    if record.get("feature") == str(config):
        feature = "false" if record.get("feature_was") == "off" else "remove"
    change = update_config(config, hooks_path, {}, removed, feature=feature,
                           delete_if_empty=_created(paths, config), dry_run=dry_run)  # fmt: skip
    _show_config(change, 0, dry_run)
    if dry_run:
        return 0
    for old in _backups(paths).glob(f"{report.path.name}.*.ctxd-backup"):
        old.unlink(missing_ok=True)
        print(f"removed ctxd's backup {old}")
    folder = hooks_path.parent
    if _created(paths, folder) and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        print(f"removed {folder} (ctxd created it; it is empty now)")
    _forget(paths)
    return 0


def _show(report: InstallReport, dry_run: bool) -> None:
    dry = " (dry run: nothing written)" if dry_run else ""
    if report.deleted:
        print(f"{report.path}: removed (ctxd created it and nothing else is left in it)")
    elif report.changes:
        print(f"{report.path}{dry}:")
        for line in report.changes:
            print(f"  {line}")
        if report.backup is not None:
            print(f"  backup of the previous version: {report.backup}")
    elif report.path.exists():
        print(f"{report.path}: no change needed")
    else:
        print(f"{report.path}: not there; nothing to remove")


def _show_config(change: TomlChange, hooks: int, dry_run: bool) -> None:
    dry = " (dry run: nothing written)" if dry_run else ""
    path = change.path
    if change.deleted:
        print(f"{path}: removed (ctxd created it and nothing else is left in it)")
    if change.trusted:
        print(
            f"{path}{dry}: marked ctxd's hooks trusted ({len(change.trusted)} [hooks.state]"
            " entries; Codex runs a hook only once it is trusted; /hooks in Codex lists them)"
        )
    elif hooks:
        print(f"{path}: ctxd's {hooks} hooks are trusted already")
    if change.untrusted:
        print(f"{path}{dry}: took out {len(change.untrusted)} trust entries of ctxd's hooks")
    if change.feature_on:
        print(f"{path}{dry}: turned on Codex's hooks feature ([features] hooks = true)")
    elif change.feature_off:
        print(f"{path}{dry}: put [features] hooks back as it was before ctxd turned it on")
    elif hooks:
        print(f"{path}: Codex's hooks feature is on already ([features] hooks = true)")


def _trusted_project(config: Path, root: Path) -> bool:
    try:
        doc = tomllib.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    projects = doc.get("projects")
    entry = projects.get(str(root)) if isinstance(projects, dict) else None
    return isinstance(entry, dict) and entry.get("trust_level") == "trusted"


def _tracked(root: Path, name: str) -> bool:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "ls-files", "--error-unmatch", name],
            capture_output=True, check=False,
        )  # fmt: skip
    except OSError:  # no git: nothing is tracked
        return False
    return done.returncode == 0


def _backups(paths: StatePaths) -> Path:
    return paths.root / "backups"


def _record(paths: StatePaths) -> dict[str, object]:
    try:
        doc = json.loads((paths.root / _RECORD).read_bytes())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _created(paths: StatePaths, path: Path) -> bool:
    created = _record(paths).get("created")
    return isinstance(created, list) and str(path) in created


def _remember(paths: StatePaths, *, created: list[str] | None = None, feature: str = "",
              feature_was: str = "") -> None:  # fmt: skip
    """Record, before making them, what ctxd creates, and the feature flag it turned on (and
    how it was: "off" when the user had turned it off)."""
    doc = _record(paths)
    known = doc.get("created")
    known = [str(c) for c in known] if isinstance(known, list) else []
    doc["created"] = known + [c for c in created or [] if c not in known]
    if feature:
        doc["feature"], doc["feature_was"] = feature, feature_was
    paths.root.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_private(paths.root / _RECORD, (json.dumps(doc, indent=2) + "\n").encode())


def _forget(paths: StatePaths) -> None:
    (paths.root / _RECORD).unlink(missing_ok=True)
