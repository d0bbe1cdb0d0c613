"""Session commands: `ctxd sessions`, `ctxd resume <session>` and `ctxd init`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from indexer import CtxdError, StatePaths, history, load_config
from summarizer.cli.commands.readonly_state import note_unindexed
from summarizer.common.cliargs import state_paths
from summarizer.daemon.session_jobs import catch_up_sessions
from summarizer.resume.sessions import (
    list_sessions,
    render_package,
    resolve_session,
    resume_package,
)

__all__ = ["cmd_resume", "cmd_sessions", "default_config_text"]

_FALLBACK_CONFIG = (
    b"# ctxd configuration. Every key and its default is documented in the config.toml\n"
    b"# shipped with ctxd; add a [section] and a key here to override it. Unknown keys are\n"
    b"# an error.\n"
)


def cmd_sessions(args: argparse.Namespace) -> int:
    """List the sessions, newest first."""
    if args.limit < 1:
        raise CtxdError("--limit must be at least 1")
    limit = None if args.all else min(args.limit, 2**63 - 1)  # SQLite's LIMIT is 64-bit
    paths = state_paths(args)
    if args.team:
        return _team_sessions(paths, limit, args.json)
    read_only = catch_up_sessions(paths)
    if read_only:
        note_unindexed("sessions", paths, read_only)
    infos = []
    if paths.index_db.exists():
        conn = history.connect(paths.index_db, readonly=True)
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
        f"{'STARTED (UTC)':<19}  {'SESSION':<8}  {'HOST':<6}  {'STATUS':<{width}}  "
        f"{'LAST ACTIVITY':<16}  EVENTS AGENTS FAILS  TITLE"
    )
    for i in infos:
        last = i.last_activity[:16].replace("T", " ")
        print(
            f"{i.stamp:<19}  {i.session_id[:8]:<8}  {i.host:<6}  "
            f"{_status(i.status, i.end_reason):<{width}}  "
            f"{last:<16}  {i.events:>6} {i.agents:>6} {i.failures:>5}  {i.title}"
        )
    return 0


def _team_sessions(paths: StatePaths, limit: int | None, as_json: bool) -> int:
    """The team store's sessions of this project, every machine, newest first."""
    from summarizer.team.reader import open_team
    from summarizer.team.reader import sessions as team_sessions

    conn, project = open_team(paths, load_config(paths.config))
    try:
        found = team_sessions(conn, project, limit)
    finally:
        conn.close()
    if as_json:
        print(json.dumps([s.to_dict() for s in found], indent=2, ensure_ascii=False))
        return 0
    if not found:
        print(f"no sessions in the team store for project {project}")
        return 0
    who = [f"{s.user}@{s.machine}" for s in found]
    wide = max(len("WHO"), *map(len, who))
    print(
        f"{'STARTED (UTC)':<19}  {'SESSION':<8}  {'HOST':<6}  {'WHO':<{wide}}  "
        f"{'LAST ACTIVITY':<16}  EVENTS AGENTS FAILS  TITLE"
    )
    for s, w in zip(found, who, strict=True):
        i = s.info
        last = i.last_activity[:16].replace("T", " ")
        print(
            f"{i.stamp:<19}  {i.session_id[:8]:<8}  {i.host:<6}  {w:<{wide}}  {last:<16}  "
            f"{i.events:>6} {i.agents:>6} {i.failures:>5}  {i.title}"
        )
    return 0


def _status(status: str, end_reason: str) -> str:
    return f"{status} ({end_reason})" if end_reason else status


def cmd_resume(args: argparse.Namespace) -> int:
    """Print a session's resume package (markdown, or JSON with --json)."""
    paths = state_paths(args)
    config = load_config(paths.config)
    read_only = catch_up_sessions(paths, config)
    if read_only:
        note_unindexed("resume", paths, read_only)
    if not paths.index_db.exists():
        raise CtxdError(f"no sessions recorded yet in {paths.root}")
    conn = history.connect(paths.index_db, readonly=True)
    try:
        info = resolve_session(conn, args.session)
        package = None if args.preview else resume_package(conn, paths, config, info)
    finally:
        conn.close()
    if package is None:
        host = "" if info.host == "claude" else info.host
        return _preview(paths.root, info.session_id, args.source, args.transcript, host)
    if args.json:
        print(json.dumps(_iso_times(package), indent=2, ensure_ascii=False))
    else:
        print(render_package(package), end="")
    return 0


def _iso_times(package: dict[str, Any]) -> dict[str, Any]:
    """The package with the saved state's nanosecond stamp as ISO-8601 UTC, like every other
    time ctxd prints in JSON."""
    saved = package.get("resume_state")
    if not isinstance(saved, dict) or not isinstance(saved.get("covers_ns"), int):
        return package
    import time

    saved = {k: v for k, v in saved.items() if k != "covers_ns"}
    covers = int(package["resume_state"]["covers_ns"])
    seconds, rem = divmod(covers, 1_000_000_000)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rem // 10**6:03d}Z"
    saved["covers"] = stamp if covers else None
    return {**package, "resume_state": saved}


def _preview(
    state_dir: Path, session_id: str, source: str, transcript: str | None, host: str
) -> int:
    """Print what SessionStart(`source`) would hand back now (stdout) and why (stderr), as the
    session's client (`host`: "" Claude Code, "codex") would get it."""
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
        str(state_dir), event, settings, consume=False, build_timeout_s=120.0, host=host
    )
    if host == "codex":
        from summarizer.resume.codex_handback import cap_bytes

        text = cap_bytes(text)
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
