"""Index commands: `ctxd ingest`, `status`, `rebuild` and `read` (seed 000 §3.3)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from indexer import store, views
from indexer.errors import CtxdError
from indexer.paths import StatePaths, is_valid_session_id, is_valid_view_name, resolve_state_paths
from indexer.writer import catch_up, is_locked, lag, writer_lock


class UsageError(CtxdError):
    """A flag value the command cannot use (exit 2)."""


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
            with store.transaction(conn):
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
    if not paths.index_db.exists():
        report.update(entries=0, sessions=0, agents=0, quarantined=0, last_ingest=None)
        # Nothing indexed yet: the whole spool is lag (the issue asks for bytes and lines).
        segments = sorted(paths.spool.glob("*.jsonl")) if paths.spool.is_dir() else []
        lag_bytes = sum(p.stat().st_size for p in segments)
        report["lag"] = {"bytes": lag_bytes, "lines": sum(_count_lines(p) for p in segments)}
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


def _count_lines(path: Path) -> int:
    """Complete lines (b"\\n") in a spool segment, read in blocks."""
    try:
        with open(path, "rb") as f:
            return sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))
    except FileNotFoundError:
        return 0


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
    print(f"last ingest: {report['last_ingest'] or 'never'}")
    print(f"state dir:   {report['state_dir']}")
    return 0


def _duration(seconds: float) -> str:
    seconds = int(max(0, seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"


# --- read -------------------------------------------------------------------------------


def validate_read(args: argparse.Namespace) -> None:
    """Seed 000 §3.3.2: the read flags and their messages."""
    if not args.agent_id:
        raise UsageError("--agent-id is required")
    if not is_valid_view_name(args.agent_id):
        raise UsageError("invalid agent-id format (letters, digits, '-' and '_', 2-64 characters)")
    if not 1 <= args.lines <= 1000:
        raise UsageError("--lines must be between 1 and 1000")
    if args.session is not None and not is_valid_session_id(args.session):
        raise UsageError("invalid session id format")


def cmd_read(args: argparse.Namespace) -> int:
    """Print the last N entries of one agent (JSON or text)."""
    try:
        validate_read(args)
    except UsageError as e:
        print(f"ctxd read: error: {e} (see `ctxd read --help`)", file=sys.stderr)
        return 2
    paths = state_paths(args)
    agent_id = args.agent_id.lower()
    catch_up(paths)
    session_id = args.session
    total = 0
    if paths.index_db.exists():
        conn = store.connect(paths.index_db, readonly=True)
        try:
            if session_id is None:
                session_id = store.latest_session_with_agent(conn, agent_id)
            if session_id is not None:
                total = int(
                    conn.execute(
                        "SELECT count(*) FROM entries WHERE session_id=? AND agent_id=?",
                        (session_id, agent_id),
                    ).fetchone()[0]
                )
        finally:
            conn.close()
    context_file = paths.session_dir(session_id) / f"{agent_id}.jsonl" if session_id else None
    raw_lines = tail_lines(context_file, args.lines) if context_file else []
    entries = [json.loads(line) for line in raw_lines]
    metadata = _metadata(agent_id, session_id or "", total, context_file)
    if args.format == "text":
        _print_text(metadata, entries, args.include_metadata)
    else:
        out: dict[str, Any] = {"metadata": metadata} if args.include_metadata else {}
        out["entries"] = entries
        json.dump(out, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    return 0


def _metadata(agent_id: str, session_id: str, total: int, path: Path | None) -> dict[str, Any]:
    size, modified = 0, None
    if path is not None:
        try:
            st = path.stat()
            size, modified = st.st_size, views.iso_utc(st.st_mtime_ns)
        except FileNotFoundError:
            pass
    return {
        "agent_id": agent_id,
        "session_id": session_id,
        "total_entries": total,
        "file_size_bytes": size,
        "last_modified": modified,
        "context_file": str(path) if path else None,
    }


def _print_text(metadata: dict[str, Any], entries: list[dict[str, Any]], with_meta: bool) -> None:
    print(
        f"Agent: {metadata['agent_id']} | Session: {metadata['session_id'] or '-'} | "
        f"Entries: {metadata['total_entries']}"
    )
    if with_meta:
        print(
            f"File: {metadata['context_file'] or '-'} | Size: {metadata['file_size_bytes']} bytes"
            f" | Modified: {metadata['last_modified'] or '-'}"
        )
    print("---")
    for e in entries:
        print(f"{e.get('timestamp', '')} [{e.get('event', '')}] {e.get('description', '')}")


def tail_lines(path: Path, n: int) -> list[bytes]:
    """The last `n` complete lines of a file, reading backwards in blocks (no full read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return []
    try:
        end = os.fstat(fd).st_size
        data = b""
        pos = end
        block = 64 * 1024
        while pos > 0 and data.count(b"\n") <= n:
            start = max(0, pos - block)
            data = os.pread(fd, pos - start, start) + data
            pos = start
            block = min(block * 2, 8 * 1024 * 1024)
    finally:
        os.close(fd)
    last_newline = data.rfind(b"\n")
    lines = data[: last_newline + 1].split(b"\n")[:-1] if last_newline >= 0 else []
    if pos > 0 and lines:
        lines = lines[1:]  # the first piece may be the tail of an older line
    return [line for line in lines[-n:] if line.strip()]
