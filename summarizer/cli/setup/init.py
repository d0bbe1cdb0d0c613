"""`ctxd init`: state directory, config and hooks, in the settings file that fits; and undo."""

# Where the hooks go: absolute paths of this machine's Python and hook script belong in
# `.claude/settings.local.json` (per machine, ignored by git); `--shared` writes a command
# found on PATH (`ctxd-hook`) into `.claude/settings.json`, which teams commit. Only one of
# the two may hold ctxd's hooks, or every event would be recorded twice.

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from indexer import CtxdError, StatePaths
from summarizer.cli.setup.gitignore import (
    ensure_gitignored,
    ignore_in_git,
    is_gitignored,
    remove_gitignored,
)
from summarizer.cli.setup.hook_command import HookCommand, default_hook_command
from summarizer.cli.setup.init_record import (
    drop_record,
    read_record,
    remember,
    remember_created,
    was_created,
)
from summarizer.cli.setup.install import (
    InstallReport,
    SettingsError,
    backup_path,
    install,
    uninstall,
    write_private,
)
from summarizer.cli.setup.plugin_state import enabled_plugin
from summarizer.common.cliargs import project_root, state_paths

__all__ = ["PORTABLE_HOOK", "cmd_init"]

PORTABLE_HOOK = HookCommand(("ctxd-hook",))


class InitError(CtxdError):
    """`ctxd init` cannot read or change a settings file."""


def cmd_init(args: argparse.Namespace) -> int:
    """Create .ctxd/ and its config, install the hooks (or remove them), and say what changed;
    `--host` chooses the client: Claude Code (the default), Codex CLI, or both."""
    host = getattr(args, "host", "claude")
    code = _init_claude(args) if host in ("claude", "all") else _state_dir_only(args)
    if host in ("codex", "all"):
        from summarizer.cli.setup.codex_init import init_codex

        paths = state_paths(args)
        code = init_codex(args, paths, project_root(paths)) or code
    return code


def _recall_on(paths: StatePaths) -> bool:
    """`[resume] recall_on_action`: PreToolUse listens before edits and commands too."""
    from indexer import load_config

    try:
        return load_config(paths.config).resume.recall_on_action
    except CtxdError:
        return True  # the config's own error is reported where it is read


def _state_dir_only(args: argparse.Namespace) -> int:
    """What `ctxd init` sets up whatever the client: .ctxd/, its config, its .gitignore line."""
    paths = state_paths(args)
    if args.uninstall:
        return 0
    _create_state_dir(paths, args.dry_run)
    root = project_root(paths)
    if not args.dry_run and ensure_gitignored(root):
        print(f"added .ctxd/ to {root / '.gitignore'}")
    return 0


def _init_claude(args: argparse.Namespace) -> int:
    """The hooks (and the MCP server) for Claude Code."""
    paths = state_paths(args)
    root = project_root(paths)
    claude = (Path.home() if args.user else root) / ".claude"
    shared, local = claude / "settings.json", claude / "settings.local.json"
    try:
        if args.uninstall:
            return _uninstall(paths, [shared] if args.user else [local, shared], args.dry_run)
        if args.user:
            target, other, command = shared, None, default_hook_command()
        elif args.shared:
            target, other, command = shared, local, PORTABLE_HOOK
        else:
            target, other, command = local, shared, default_hook_command()
        _create_state_dir(paths, args.dry_run)
        plugin = enabled_plugin(root)
        if plugin and not args.user and not args.shared:
            print(f"ctxd's hooks come from the Claude Code plugin {plugin}; no hooks added")
            target, other = shared, None
        elif target == local and _has_portable_hooks(shared):
            print(f"{shared}: has ctxd's shared hooks (`ctxd-hook` on PATH); nothing to add")
            target, other = shared, None
        else:
            if not args.dry_run:
                remember_created(paths, [p for p in (claude, target) if not p.exists()])
            report = install(target, command, dry_run=args.dry_run, backup_dir=_backups(paths),
                             recall=_recall_on(paths))  # fmt: skip
            _show(report, args.dry_run)
        if not args.user:  # the MCP server is per project, in its .mcp.json (before the
            # other settings file is emptied, so one left empty by both can go)
            if plugin and not args.shared:
                print(f"the MCP server comes from the plugin {plugin} too; .mcp.json left alone")
            else:
                _register_mcp(paths, root, args.dry_run, shared=args.shared)
        if other is not None:  # hooks in both files would record every event twice
            report = uninstall(
                other,
                dry_run=args.dry_run,
                delete_if_empty=was_created(paths, other),
                backup_dir=_backups(paths),
            )
            if report.changes:
                _show(report, args.dry_run)
    except SettingsError as e:
        raise InitError(str(e)) from None
    if args.dry_run:
        return 0
    # The state dir keeps itself out of git (its own `.gitignore` of `*`), so that it stays
    # out after `--uninstall` has given the project's .gitignore back as it was.
    ignore_in_git(str(paths.root))
    _gitignore(paths, root, ".ctxd/", "")
    if target == local:
        _gitignore(paths, root, ".claude/settings.local.json", " (paths of this machine)")
    mcp_path = root / ".mcp.json"
    ours = not args.user and not args.shared and was_created(paths, mcp_path)
    if ours and mcp_path.exists():
        _gitignore(paths, root, ".mcp.json", " (a path of this machine)")
    return 0


def _gitignore(paths: StatePaths, root: Path, entry: str, why: str) -> None:
    """Add `entry` to the project's .gitignore, recording it first so `--uninstall` takes out
    exactly the lines ctxd added (and the file, if ctxd created it)."""
    gitignore = root / ".gitignore"
    if is_gitignored(root, entry):  # ours from an earlier run, or the user's own line
        return
    if not gitignore.exists():
        remember_created(paths, [gitignore])
    remember(paths, "gitignore", [entry])
    ensure_gitignored(root, entry)
    print(f"added {entry} to {gitignore}{why}")


def _restore_gitignore(paths: StatePaths, root: Path, dry_run: bool) -> None:
    """Take out of the project's .gitignore the lines `ctxd init` added; delete the file if
    ctxd created it and nothing else is left in it."""
    gitignore = root / ".gitignore"
    for entry in read_record(paths).get("gitignore", []):
        if dry_run:
            print(f"would take {entry} out of {gitignore} (dry run: nothing written)")
        elif remove_gitignored(root, entry):
            print(f"took {entry} out of {gitignore}")
    if dry_run:
        return
    drop_record(paths, "gitignore")  # a line the user adds from now on is theirs
    if not was_created(paths, gitignore):
        return
    try:
        left = gitignore.read_text(encoding="utf-8")
    except OSError:
        return
    if not left.strip():
        gitignore.unlink()
        print(f"{gitignore}: removed (ctxd created it and nothing else is left in it)")


def _has_portable_hooks(settings: Path) -> bool:
    """True if `settings` runs the hook by name (what `ctxd init --shared` writes)."""
    try:
        doc = json.loads(settings.read_bytes())
    except (OSError, ValueError):
        return False
    groups = doc.get("hooks", {}).values() if isinstance(doc, dict) else []
    return any(
        isinstance(h, dict) and h.get("command") == PORTABLE_HOOK.argv[0]
        for group_list in groups if isinstance(group_list, list)
        for group in group_list if isinstance(group, dict)
        for h in group.get("hooks", []) or []
    )  # fmt: skip


def _show(report: InstallReport, dry_run: bool, with_backup: bool = True) -> None:
    dry = " (dry run: nothing written)" if dry_run else ""
    if report.deleted:
        print(f"{report.path}: removed (ctxd created it and nothing else is left in it)")
        for line in report.changes:
            print(f"  {line}")
    elif report.changes:
        print(f"{report.path}{dry}:")
        for line in report.changes:
            print(f"  {line}")
        if report.backup is not None and with_backup:
            print(f"  backup of the previous version: {report.backup}")
    elif report.path.exists():
        print(f"{report.path}: no change needed")
    else:
        print(f"{report.path}: not there; nothing to remove")


def _register_mcp(paths: StatePaths, root: Path, dry_run: bool, shared: bool) -> None:
    """`ctxd mcp` in the project's .mcp.json: the portable command with `--shared`; else this
    machine's interpreter, never in a .mcp.json that git tracks (a committed file must not get a
    path of this machine), and a .mcp.json ctxd creates is kept out of git."""
    from summarizer.cli.setup.mcp_config import register_mcp, unregister_mcp

    mcp_path = root / ".mcp.json"
    if not shared and _tracked_by_git(root, mcp_path):
        print(
            f"{mcp_path}: left as it is (git tracks it); `ctxd init --shared` registers the MCP"
            " server there with a portable command"
        )
        return
    if shared and not dry_run:  # this machine's approval and ignore entry give way
        local = root / ".claude" / "settings.local.json"
        if local.exists():
            unregister_mcp(root, only=local)
        if remove_gitignored(root, ".mcp.json"):
            print(f"took .mcp.json out of {root / '.gitignore'} (it holds a portable command now)")
    if not dry_run:  # recorded before they exist, so `--uninstall` may remove them
        new = [root / ".claude"] + (
            [] if shared else [mcp_path, root / ".claude" / "settings.local.json"]
        )
        remember_created(paths, [p for p in new if not p.exists()])
    dry = " (dry run: nothing written)" if dry_run else ""
    for line in register_mcp(root, dry_run=dry_run, shared=shared):
        print(f"{line}{dry}")


def _tracked_by_git(root: Path, path: Path) -> bool:
    import subprocess

    try:
        done = subprocess.run(
            ["git", "-C", str(root), "ls-files", "--error-unmatch", path.name],
            capture_output=True,
            check=False,
        )
    except OSError:  # no git: nothing is tracked
        return False
    return done.returncode == 0


def _unregister_mcp(paths: StatePaths, root: Path, dry_run: bool) -> None:
    from summarizer.cli.setup.mcp_config import unregister_mcp

    for line in unregister_mcp(root, dry_run=dry_run):
        print(line + (" (dry run: nothing written)" if dry_run else ""))
    mcp_path = root / ".mcp.json"
    if dry_run or not was_created(paths, mcp_path):
        return
    try:
        left = json.loads(mcp_path.read_bytes())
    except (OSError, ValueError):
        return
    if left in ({}, {"mcpServers": {}}):
        mcp_path.unlink()
        print(f"{mcp_path}: removed (ctxd created it and nothing else is left in it)")


def _uninstall(paths: StatePaths, targets: list[Path], dry_run: bool) -> int:
    if paths.root.is_dir() and not dry_run:
        from summarizer.cli.commands.lifecycle import stop_daemon

        pid = stop_daemon(paths)
        print(f"stopped the daemon (pid {pid})" if pid else "no daemon was running")
    if len(targets) > 1:  # a project (not --user): its MCP server goes too, before the
        # settings files, so a settings.local.json left empty by both can be removed
        _unregister_mcp(paths, project_root(paths), dry_run)
    for target in targets:
        report = uninstall(
            target,
            dry_run=dry_run,
            delete_if_empty=was_created(paths, target),
            backup_dir=_backups(paths),
        )
        _show(report, dry_run, with_backup=False)
        backup = backup_path(report.path, _backups(paths))
        if not dry_run and backup.exists():
            backup.unlink()
            print(f"removed ctxd's backup {backup}")
    if not dry_run:
        claude = targets[0].parent
        if was_created(paths, claude) and claude.is_dir() and not any(claude.iterdir()):
            claude.rmdir()
            print(f"removed {claude} (ctxd created it; it is empty now)")
    if len(targets) > 1:  # a project's .gitignore (not --user)
        _restore_gitignore(paths, project_root(paths), dry_run)
    if paths.root.is_dir():
        print(
            f"kept {paths.root} (the captured sessions; delete it to remove them; its own "
            ".gitignore keeps it out of git)"
        )
    return 0


def _backups(paths: StatePaths) -> Path:
    return paths.root / "backups"


def _make_private(paths: StatePaths) -> None:
    """chmod our existing state dir to 0700; a symlink is not followed (ensure refuses it)."""
    try:
        fd = os.open(paths.root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if os.fstat(fd).st_uid == os.geteuid():
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)


def _create_state_dir(paths: StatePaths, dry_run: bool) -> None:
    from summarizer.cli.commands.sessions import default_config_text

    existed = paths.root.is_dir()
    has_config = paths.config.exists()
    if dry_run:
        if not existed:
            print(f"would create {paths.root} (0700)")
        if not has_config:
            print(f"would write {paths.config}")
        return
    if existed:
        _make_private(paths)  # before ensure(), which refuses a group-writable state dir
    paths.ensure()
    if not existed:
        print(f"created {paths.root} (0700)")
    if not has_config:
        write_private(paths.config, default_config_text())
        print(f"wrote {paths.config} (the documented defaults; edit to override)")
