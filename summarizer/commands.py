"""Index commands: `ctxd ingest`, `status`, `rebuild` and `read` (seed 000 §3.3)."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from indexer import store, views
from indexer.hook import failure_count
from indexer.paths import StatePaths, resolve_state_paths
from indexer.writer import catch_up, is_locked, lag, spool_lag, writer_lock


def state_paths(args: argparse.Namespace) -> StatePaths:
    """The state directory selected by --state-dir or the environment."""
    return resolve_state_paths(getattr(args, "state_dir", None))


def cmd_ingest(args: argparse.Namespace) -> int:
    """Run one catch-up pass and report what it did."""
    paths = state_paths(args)
    result = catch_up(paths, wait_s=30.0)
    if result.by_daemon:
        state = "caught up" if result.caught_up else "still behind after 30 s"
        print(f"the daemon holds the index; it is {state}")
        return 0 if result.caught_up else 1
    s = result.stats
    print(
        f"indexed {s.entries} entries from {s.lines} lines ({s.bytes} bytes); "
        f"{s.duplicates} duplicates, {s.quarantined} quarantined, {s.anomalies} anomalies"
    )
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    """Regenerate every view from the index."""
    paths = state_paths(args)
    catch_up(paths)
    with writer_lock(paths, wait_s=10.0):
        conn = store.connect(paths.index_db)
        try:
            written = views.rebuild_all(conn, paths)
        finally:
            conn.close()
    print(f"rebuilt the views: {written} lines")
    return 0


def daemon_info(paths: StatePaths) -> dict[str, Any]:
    """The daemon's heartbeat file, if a daemon holds the lock now."""
    if not is_locked(paths):
        return {}
    try:
        info = json.loads(paths.daemon_json.read_bytes())
    except (OSError, ValueError):
        return {"pid": None}
    return info if isinstance(info, dict) else {"pid": None}


def status_report(paths: StatePaths) -> dict[str, Any]:
    """Everything `ctxd status` shows, as a dict."""
    info = daemon_info(paths)
    report: dict[str, Any] = {"state_dir": str(paths.root), "daemon": info or None}
    report["hook_failures"] = failure_count(str(paths.root))
    if not paths.index_db.exists():
        report.update(entries=0, sessions=0, agents=0, quarantined=0, last_ingest=None)
        lag_bytes, lag_lines = spool_lag(paths.spool, {})  # nothing indexed: all of it is lag
        report["lag"] = {"bytes": lag_bytes, "lines": lag_lines}
        return report
    conn = store.connect(paths.index_db, readonly=True)
    try:
        lag_bytes, lag_lines = lag(conn, paths.spool)
        last = int(store.get_meta(conn, "last_ingest_ns", "0") or 0)
        report.update(
            entries=store.count(conn, "entries"),
            sessions=store.count(conn, "sessions"),
            agents=store.count(conn, "agents"),
            quarantined=store.count(conn, "quarantine"),
            last_ingest=views.iso_utc(last) if last else None,
            lag={"bytes": lag_bytes, "lines": lag_lines},
            anomalies={
                k: v
                for k, v in conn.execute("SELECT key, value FROM meta WHERE key LIKE 'anomaly.%'")
            },
            last_compaction=store.get_meta(conn, "last_compaction", "") or None,
        )
    finally:
        conn.close()
    return report


def cmd_status(args: argparse.Namespace) -> int:
    """Show the daemon, the spool lag and the index counts."""
    report = status_report(state_paths(args))
    if args.json:
        print(json.dumps(report, indent=2))
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
        print(f"hook errors: {report['hook_failures']} events could not be spooled (see doctor)")
    missing = int((report.get("anomalies") or {}).get("anomaly.missing", 0))
    if missing:
        print(f"lost:        {missing} spool segments vanished before they were indexed")
    print(f"last ingest: {report['last_ingest'] or 'never'}")
    print(f"state dir:   {report['state_dir']}")
    return 0


def _duration(seconds: float) -> str:
    seconds = int(max(0, seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"
