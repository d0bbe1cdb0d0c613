"""`ctxd status`: daemon, spool lag and index counts, read with sqlite3 and the stdlib only."""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import time
from typing import Any

from indexer import (
    StateDirError,
    StatePaths,
    changes,
    connect_readonly,
    daemon_channel,
    losses,
    query,
    safefs,
    spool_lag,
    unwritable_reason,
)
from summarizer.common.cliargs import state_paths

__all__ = ["cmd_status", "daemon_info", "refuse_foreign", "status_report"]

_TABLES = ("entries", "sessions", "agents", "quarantine")


def daemon_info(paths: StatePaths) -> dict[str, Any]:
    """The daemon's heartbeat file, if a daemon runs now (its socket accepts a connection;
    a command or the builder started on PreCompact may hold the writer lock, and is none)."""
    try:
        running = daemon_channel.is_listening(paths.root)
    except OSError as e:
        raise StateDirError(f"cannot reach {paths.root}: {e.strerror}; check the state dir") from e
    if not running:
        return {}
    try:
        info = json.loads(paths.daemon_json.read_bytes())
    except (OSError, ValueError):
        return {"pid": None}
    return info if isinstance(info, dict) else {"pid": None}


def status_report(paths: StatePaths) -> dict[str, Any]:
    """Everything `ctxd status` shows, as a dict."""
    lost = losses(str(paths.root))
    refuse_foreign(paths, sum(lost.values()))
    info = daemon_info(paths)
    report: dict[str, Any] = {"state_dir": str(paths.root), "daemon": info or None}
    report["hook_failures"] = sum(lost.values())
    report["hook_failure_reasons"] = lost
    report["read_only"] = unwritable_reason(paths.root) or None
    if not paths.index_db.exists():
        report.update(entries=0, sessions=0, agents=0, quarantined=0, last_ingest=None)
        lag_bytes, lag_lines = spool_lag(paths.spool, {})  # nothing indexed: all of it is lag
        report["lag"] = {"bytes": lag_bytes, "lines": lag_lines}
        return report
    conn = _connect(paths)
    try:
        offsets = query.active_offsets(conn)
        lag_bytes, lag_lines = spool_lag(paths.spool, offsets)
        counts = query.table_counts(conn, _TABLES)
        meta = query.meta_values(conn, ("last_ingest_ns", "last_compaction"), "anomaly.")
    finally:
        conn.close()
    last = int(meta.get("last_ingest_ns", "0") or 0)
    report.update(
        entries=counts[0],
        sessions=counts[1],
        agents=counts[2],
        quarantined=counts[3],
        last_ingest=_iso_utc(last) if last else None,
        lag={"bytes": lag_bytes, "lines": lag_lines},
        anomalies={k: v for k, v in meta.items() if k.startswith("anomaly.")},
        last_compaction=meta.get("last_compaction") or None,
    )
    report["team"] = _team_shipping(paths)
    return report


def _team_shipping(paths: StatePaths) -> dict[str, Any] | None:
    """How shipping to the team store stands, from its state file (no connection): None when
    this state directory never shipped, or CTXD_TEAM_DSN is set empty (shipping off)."""
    path = paths.root / "team" / "state.json"
    if os.environ.get("CTXD_TEAM_DSN") == "" or not path.is_file():
        return None
    try:
        state = json.loads(safefs.read_bytes(paths.root, path))
        cursor = int(state.get("entry_cursor", 0))
    except (OSError, StateDirError, ValueError, TypeError, AttributeError):
        return None
    conn = connect_readonly(paths.index_db)
    waiting = None
    if conn is not None:
        try:
            same = state.get("index_id") == changes.index_id(conn)
            waiting = changes.count_after(conn, cursor if same else 0)
        finally:
            conn.close()
    return {
        "entry_cursor": cursor,
        "waiting": waiting,
        "last_ship": _iso_utc(int(state.get("last_ship_ns", 0)))
        if state.get("last_ship_ns")
        else None,
        "last_error": state.get("last_error") or None,
        "retry_at": _iso_utc(int(state.get("retry_at_ns", 0))) if state.get("last_error") else None,
    }


def cmd_status(args: argparse.Namespace) -> int:
    """Show the daemon, the spool lag and the index counts."""
    report = status_report(state_paths(args))
    if args.json:
        print(json.dumps(_iso_times(report), indent=2))
        return 0
    d = report["daemon"]
    if d:
        started = float(d.get("started", 0) or 0)
        uptime = f", up {_duration(time.time() - started)}" if started else ""
        print(f"daemon:      running (pid {d.get('pid')}{uptime})")
    else:
        print("daemon:      not running")
    lag_info = report["lag"]
    lines = "?" if lag_info["lines"] is None else lag_info["lines"]
    print(f"spool lag:   {lag_info['bytes']} bytes, {lines} lines not yet indexed")
    print(f"entries:     {report['entries']}")
    print(f"sessions:    {report['sessions']}")
    print(f"agents:      {report['agents']}")
    print(f"quarantined: {report['quarantined']}")
    if report["hook_failures"]:
        why = ", ".join(f"{k}: {v}" for k, v in sorted(report["hook_failure_reasons"].items()))
        print(
            f"hook errors: {report['hook_failures']} events could not be spooled ({why}); "
            "see ctxd doctor"
        )
    missing = int((report.get("anomalies") or {}).get("anomaly.missing", 0))
    if missing:
        print(f"lost:        {missing} spool segments vanished before they were indexed")
    print(f"last ingest: {report['last_ingest'] or 'never'}")
    team = report.get("team")
    if team:
        waiting = "?" if team["waiting"] is None else team["waiting"]
        if team["last_error"]:
            print(
                f"team:        NOT SHIPPING: {team['last_error']}; {waiting} entries waiting, "
                f"next try {team['retry_at']} (indexing goes on; see ctxd team status)"
            )
        else:
            print(
                f"team:        shipped up to entry {team['entry_cursor']}, {waiting} waiting "
                f"(last {team['last_ship'] or 'never'})"
            )
    read_only = f" (cannot be written: {report['read_only']})" if report["read_only"] else ""
    print(f"state dir:   {report['state_dir']}{read_only}")
    return 0


def refuse_foreign(paths: StatePaths, lost: int) -> None:
    """Raise a one-line error when the state dir belongs to another user: ctxd neither
    reads nor writes through it, so this user's hooks lose their events; say how many."""
    try:
        uid = os.stat(paths.root, follow_symlinks=False).st_uid
    except OSError:
        return
    if uid == os.geteuid():
        return
    raise StateDirError(
        f"{paths.root} belongs to {_user_name(uid)}, not to you: ctxd's hooks do not record "
        f"there ({lost} events lost so far); make it yours with `sudo chown -R "
        f"{_user_name()} {paths.root}`"
    )


def _user_name(uid: int | None = None) -> str:
    import pwd

    uid = os.geteuid() if uid is None else uid
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


# The daemon's heartbeat file keeps epoch seconds; every JSON ctxd prints uses ISO-8601 UTC.
_EPOCH_KEYS = ("started", "heartbeat", "last_lines_at")


def _iso_times(report: dict[str, Any]) -> dict[str, Any]:
    daemon = report.get("daemon")
    if not daemon:
        return report
    daemon = dict(daemon)
    for key in _EPOCH_KEYS:
        value = daemon.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            daemon[key] = _iso_utc(int(value * 1e9)) if value else None
    return {**report, "daemon": daemon}


def _connect(paths: StatePaths) -> sqlite3.Connection:
    conn = connect_readonly(paths.index_db)
    if conn is not None:
        return conn
    # Another schema version or a damaged file: the full store explains what is wrong.
    return query.open_index(paths.index_db)


def _iso_utc(ts_ns: int) -> str:
    # The same format as indexer.views.update.iso_utc, without importing the view writer.
    seconds, rem = divmod(ts_ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rem // 1_000_000:03d}Z"


def _duration(seconds: float) -> str:
    seconds = int(max(0, seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"
