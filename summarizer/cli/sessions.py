"""Session commands: `ctxd sessions`, `ctxd resume <session>` and `ctxd init`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from indexer import store
from indexer.config import load_config
from indexer.errors import CtxdError
from indexer.fileio import write_atomic
from indexer.paths import StatePaths
from summarizer.cli.doctor import project_root
from summarizer.common.cliargs import state_paths
from summarizer.daemon.session_jobs import catch_up_sessions
from summarizer.resume.sessions import (
    list_sessions,
    render_package,
    resolve_session,
    resume_package,
)

__all__ = ["InitError", "cmd_init", "cmd_resume", "cmd_sessions", "default_config_text"]

_FALLBACK_CONFIG = (
    b"# ctxd configuration. Every key and its default is documented in the config.toml\n"
    b"# shipped with ctxd; add a [section] and a key here to override it. Unknown keys are\n"
    b"# an error.\n"
)


class InitError(CtxdError):
    """`ctxd init` cannot read or change a settings file."""


def cmd_sessions(args: argparse.Namespace) -> int:
    """List the sessions, newest first."""
    if args.limit < 1:
        raise CtxdError("--limit must be at least 1")
    limit = None if args.all else args.limit
    paths = state_paths(args)
    catch_up_sessions(paths)
    infos = []
    if paths.index_db.exists():
        conn = store.connect(paths.index_db, readonly=True)
        try:
            infos = list_sessions(conn, limit)
        finally:
            conn.close()
    if args.json:
        print(json.dumps([i.to_dict() for i in infos], indent=2, ensure_ascii=False))
        return 0
    if not infos:
        print(f"no sessions recorded yet in {paths.root}")
        return 0
    width = max(len("STATUS"), *(len(_status(i.status, i.end_reason)) for i in infos))
    print(
        f"{'STARTED (UTC)':<19}  {'SESSION':<8}  {'STATUS':<{width}}  {'LAST ACTIVITY':<16}  "
        "EVENTS AGENTS FAILS  TITLE"
    )
    for i in infos:
        last = i.last_activity[:16].replace("T", " ")
        print(
            f"{i.stamp:<19}  {i.session_id[:8]:<8}  {_status(i.status, i.end_reason):<{width}}  "
            f"{last:<16}  {i.events:>6} {i.agents:>6} {i.failures:>5}  {i.title}"
        )
    return 0


def _status(status: str, end_reason: str) -> str:
    return f"{status} ({end_reason})" if end_reason else status


def cmd_resume(args: argparse.Namespace) -> int:
    """Print a session's resume package (markdown, or JSON with --json)."""
    paths = state_paths(args)
    config = load_config(paths.config)
    catch_up_sessions(paths, config)
    if not paths.index_db.exists():
        raise CtxdError(f"no sessions recorded yet in {paths.root}")
    conn = store.connect(paths.index_db, readonly=True)
    try:
        info = resolve_session(conn, args.session)
        package = None if args.preview else resume_package(conn, paths, config, info)
    finally:
        conn.close()
    if package is None:
        return _preview(paths.root, info.session_id, args.source, args.transcript)
    if args.json:
        print(json.dumps(package, indent=2, ensure_ascii=False))
    else:
        print(render_package(package), end="")
    return 0


def _preview(state_dir: Path, session_id: str, source: str, transcript: str | None) -> int:
    """Print what SessionStart(`source`) would hand back now (stdout) and why (stderr)."""
    from summarizer.resume.handback import last_transcript
    from summarizer.resume.hook import plan_session_start
    from summarizer.resume.hook_settings import read_settings

    folder = state_dir / "resume" / session_id
    event = {
        "session_id": session_id,
        "source": source,
        "transcript_path": transcript or last_transcript(str(folder)),
    }
    settings = read_settings(str(state_dir))
    text, why, _ = plan_session_start(
        str(state_dir), event, settings, consume=False, build_timeout_s=120.0
    )
    size = f"{len(text)} characters" if text.strip() else "nothing"
    print(f"ctxd: SessionStart({source}) would hand back {size}: {why}", file=sys.stderr)
    if text.strip():
        print(text, end="" if text.endswith("\n") else "\n")
    return 0


def default_config_text() -> bytes:
    """The documented default config.toml shipped as package data (a short stub if absent)."""
    import indexer

    try:
        return (Path(indexer.__file__).parent / "default_config.toml").read_bytes()
    except OSError:
        return _FALLBACK_CONFIG


def cmd_init(args: argparse.Namespace) -> int:
    """Create .ctxd/ and its config.toml, install the hooks, and ignore .ctxd/ in git."""
    from summarizer.cli.install import (
        SettingsError,
        default_hook_command,
        ensure_gitignored,
        install,
        uninstall,
    )

    paths = state_paths(args)
    root = project_root(paths)
    settings = (Path.home() if args.user else root) / ".claude" / "settings.json"
    dry = " (dry run: nothing written)" if args.dry_run else ""
    try:
        if args.uninstall:
            report = uninstall(settings, dry_run=args.dry_run)
        else:
            _create_state_dir(paths, args.dry_run)
            report = install(settings, default_hook_command(), dry_run=args.dry_run)
    except SettingsError as e:
        raise InitError(str(e)) from None
    if report.changes:
        print(f"{report.path}{dry}:")
        for line in report.changes:
            print(f"  {line}")
        if report.backup is not None:
            print(f"  backup: {report.backup}")
    else:
        print(f"{report.path}: no change needed")
    if args.uninstall:
        print(f"left {paths.root} and the .gitignore entry in place (your captured data)")
        return 0
    if not args.dry_run and ensure_gitignored(root):
        print(f"added .ctxd/ to {root / '.gitignore'}")
    return 0


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
        write_atomic(paths.config, default_config_text(), root=paths.root)
        print(f"wrote {paths.config} (the documented defaults; edit to override)")
