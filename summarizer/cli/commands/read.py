"""`ctxd read` (seed 000 §3.3): one agent's recent history, without msgspec when nothing is new.

The orchestrator calls this often, so the common case (index current) imports only the
standard library and `indexer.queries.readonly`; the full catch-up is imported only when the spool
holds unindexed lines (I12).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from indexer import (
    CtxdError,
    StatePaths,
    connect_readonly,
    count_agent_entries,
    index_is_current,
    is_valid_session_id,
    is_valid_view_name,
    lines_backwards,
)
from summarizer.cli.commands.read_target import resolve_read_target
from summarizer.common.cliargs import state_paths


class UsageError(CtxdError):
    """A flag value the command cannot use (exit 2)."""


def validate_read(args: argparse.Namespace) -> None:
    """Seed 000 §3.3.2: the read flags and their messages."""
    if not args.agent_id:
        raise UsageError("--agent-id is required")
    if not is_valid_view_name(args.agent_id):
        raise UsageError(
            "invalid agent-id format (letters, digits, '-' and '_', 2-64 characters; "
            "not agent-instructions, all-agent-instructions or todos)"
        )
    if not 1 <= args.lines <= 1000:
        raise UsageError("--lines must be between 1 and 1000")
    if args.session is not None and not is_valid_session_id(args.session):
        raise UsageError("invalid session id format")


def _current_connection(paths: StatePaths) -> Any:
    """A read-only connection to an index that covers the spool, catching up if needed."""
    conn = connect_readonly(paths.index_db)
    if conn is not None and index_is_current(conn, paths.spool):
        return conn
    if conn is not None:
        conn.close()
    from indexer import catch_up  # only now: it loads msgspec and the ingest code

    result = catch_up(paths)
    if result.read_only:
        from summarizer.cli.commands.readonly_state import note_unindexed

        note_unindexed("read", paths, result.read_only)
    return connect_readonly(paths.index_db)


def cmd_read(args: argparse.Namespace) -> int:
    """Print the last N entries of one agent (JSON or text)."""
    try:
        validate_read(args)
    except UsageError as e:
        print(f"ctxd read: error: {e} (see `ctxd read --help`)", file=sys.stderr)
        return 2
    paths = state_paths(args)
    agent_id = args.agent_id.lower()
    session_id = args.session
    total = 0
    conn = _current_connection(paths)
    if conn is not None:
        try:
            session_id, agent_id = resolve_read_target(conn, agent_id, session_id)
            if session_id is not None:
                total = count_agent_entries(conn, session_id, agent_id)
        except CtxdError as e:
            print(f"ctxd read: error: {e}", file=sys.stderr)
            return 1
        finally:
            conn.close()
    context_file = paths.session_dir(session_id) / f"{agent_id}.jsonl" if session_id else None
    entries, skipped = latest_view_entries(context_file, args.lines) if context_file else ([], 0)
    metadata = _metadata(agent_id, session_id or "", total, context_file)
    if args.format == "text":
        _print_text(metadata, entries, args.include_metadata)
        if skipped:
            print(
                f"ctxd read: skipped {skipped} corrupt line{'s' if skipped > 1 else ''} of "
                f"{context_file}; `ctxd rebuild` writes the views again from the index",
                file=sys.stderr,
            )
    else:
        out: dict[str, Any] = {"metadata": metadata} if args.include_metadata else {}
        out["entries"] = entries
        if skipped:
            out["skipped_lines"] = skipped
        json.dump(out, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    return 0


def _iso_utc(ts_ns: int) -> str:
    seconds, rem = divmod(ts_ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rem // 1_000_000:03d}Z"


def _metadata(agent_id: str, session_id: str, total: int, path: Path | None) -> dict[str, Any]:
    size, modified = 0, None
    if path is not None:
        try:
            st = path.stat()
            size, modified = st.st_size, _iso_utc(st.st_mtime_ns)
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


def latest_view_entries(path: Path, n: int) -> tuple[list[dict[str, Any]], int]:
    """The last `n` entries of a view file that parse, oldest first, and how many corrupt lines
    (not a JSON object) were skipped on the way back to them (seed 000 §3.3.4)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return [], 0
    try:
        lines = lines_backwards(fd, os.fstat(fd).st_size)
        entries, skipped = _parse_latest(lines, n)
    finally:
        os.close(fd)
    entries.reverse()
    return entries, skipped


def _parse_latest(lines: Iterator[bytes], n: int) -> tuple[list[dict[str, Any]], int]:
    entries: list[dict[str, Any]] = []
    skipped = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            entry = None
        if not isinstance(entry, dict):
            skipped += 1
            continue
        entries.append(entry)
        if len(entries) == n:
            break
    return entries, skipped
