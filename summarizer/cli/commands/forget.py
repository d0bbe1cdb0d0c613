"""`ctxd forget`: delete sessions from the spool, index, views and memory, then VACUUM."""

from __future__ import annotations

import argparse
import calendar
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from indexer import (
    CtxdError,
    IndexWriter,
    RetentionReport,
    StatePaths,
    agents_of_sessions,
    check_session_id,
    history,
    is_segment_name,
    is_valid_agent_id,
    open_writer,
    purge,
    query,
    rebuild_all,
    rewrite_segment,
    safefs,
    session_of,
    writer_lock,
)
from summarizer.common.cliargs import state_paths
from summarizer.handoff.account import write_accounts
from summarizer.handoff.queue import ACCOUNTS_DIR, HANDOFF_DIR
from summarizer.memory.store import drop_orphan_terms
from summarizer.resume.recall_table import RECALL_DIR
from summarizer.resume.sessions import SessionNotFoundError, resolve_session

__all__ = ["ForgetReport", "cmd_forget", "forget"]

# Tables keyed by session: the index's and the memory's. Memory rows of a forgotten session
# go whole (a failure seen in several sessions keeps the last session's id and goes with it).
_SESSION_TABLES = (
    "entries",
    "search_mem",  # its trigger takes the memory items out of the search index
    "sessions",
    "agents",
    "agent_aliases",
    "dirty_views",
    "mem_decisions",
    "mem_failures",
    "mem_constraints",
    "mem_features",
    "mem_files",
    "mem_sessions",
)


# Passes over the whole spool before lines are taken out: hooks may append all along, and
# each segment to rewrite is brought level under its own append lock anyway.
_DRAIN_PASSES = 3


@dataclass
class ForgetReport:
    """What one forget run deleted, and the spool segments it had to keep."""

    sessions: list[str] = field(default_factory=list)
    rows: int = 0
    spool: RetentionReport = field(default_factory=RetentionReport)


def forget(paths: StatePaths, session_id: str | None, before_ns: int | None) -> ForgetReport:
    """Forget one session, or every session last active before `before_ns` (and the spool
    segments of hours before it). The caller must not hold the writer lock: this takes it."""
    report = ForgetReport()
    handoff = paths.root / HANDOFF_DIR
    with writer_lock(paths, wait_s=10.0):
        writer = open_writer(paths)
        try:
            writer.start()
            # Index what is there; a segment that hooks keep appending to is brought level
            # again under its append lock before lines are taken out of it.
            for _ in range(_DRAIN_PASSES):
                if not writer.pass_once().lines:
                    break
            conn = writer.conn
            report.sessions = _sessions(conn, paths, session_id, before_ns)
            agents = agents_of_sessions(conn, report.sessions)
            # The spool first: if this run is cut short, the rows left still name the
            # session, so running forget again finishes the job.
            _forget_spool(paths, writer, report, before_ns)
            report.rows = _delete_rows(conn, report.sessions, before_ns)
            for sid in report.sessions:
                for folder in (
                    paths.sessions / sid,
                    paths.resume / sid,
                    handoff / "sessions" / sid,
                ):
                    safefs.rmtree(paths.root, folder)
                page = paths.root / "pages" / f"{sid}.html"  # `ctxd view`'s page
                safefs.rmtree(paths.root, page)
                safefs.rmtree(paths.root, paths.root / RECALL_DIR / f"{sid}.shown")
            # Agents' accounts may tell of a forgotten run: drop them, then rewrite those of
            # agents that still have a run in a session that stays.
            for agent_id in agents:
                if is_valid_agent_id(agent_id):
                    safefs.rmtree(paths.root, handoff / ACCOUNTS_DIR / f"{agent_id}.md")
            write_accounts(conn, paths, agents)
            if report.sessions or report.rows:
                # The project-wide view and the views of sessions that keep some entries
                # still hold forgotten lines: rebuild every view from what is left.
                rebuild_all(conn, paths)
            if report.sessions:
                # Built from the memory of every session: rebuilt at the next compaction.
                safefs.clear_dir(paths.root, paths.context)
                _drop_recall_tables(paths)
            # Deleted rows stay in free pages and in the WAL until both are rewritten (unless
            # SQLite was built with secure_delete on, which zeroes freed pages).
            purge.compact_file(conn)
        finally:
            writer.close()
    return report


def _drop_recall_tables(paths: StatePaths) -> None:
    """Each session's recall table holds the project's items: rebuilt at its next update."""
    try:
        dir_fd = safefs.open_dir(paths.root, paths.root / RECALL_DIR, create=False)
    except FileNotFoundError:
        return
    try:
        for name in os.listdir(dir_fd):
            if name.endswith(".tsv"):
                os.unlink(name, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def _sessions(
    conn: sqlite3.Connection, paths: StatePaths, session_id: str | None, before_ns: int | None
) -> list[str]:
    if session_id is not None:
        return [_named_session(conn, paths, session_id)]
    return [] if before_ns is None else query.session_ids_before(conn, before_ns)


def _named_session(conn: sqlite3.Connection, paths: StatePaths, ref: str) -> str:
    """`ref` if something of that session is left; an error otherwise. Deletion takes the
    whole id only: a prefix that other commands would accept is named back, not forgotten."""
    sid = check_session_id(ref)
    left = (
        paths.sessions / sid,
        paths.resume / sid,
        paths.root / HANDOFF_DIR / "sessions" / sid,
        paths.root / "pages" / f"{sid}.html",
    )
    if purge.session_has_rows(conn, sid, _SESSION_TABLES) or any(map(os.path.lexists, left)):
        return sid
    if _in_spool(paths, sid):  # an earlier run kept a segment it could not rewrite
        return sid
    try:
        info = resolve_session(conn, ref)
    except SessionNotFoundError:
        raise CtxdError(
            f"no session {ref!r} to forget; `ctxd sessions --json` lists the whole ids"
        ) from None
    raise CtxdError(
        f"{ref!r} is not a whole session id: to forget session {info.session_id} "
        f"({info.stamp}), give its whole id"
    )


def _in_spool(paths: StatePaths, sid: str) -> bool:
    needle = f'"{sid}"'.encode()
    try:
        names = [n for n in os.listdir(paths.spool) if n.endswith(".jsonl")]
    except FileNotFoundError:
        return False
    for name in names:
        try:
            data = safefs.read_bytes(paths.root, paths.spool / name)
        except (OSError, CtxdError):
            continue
        if needle in data:
            return True
    return False


def _delete_rows(conn: sqlite3.Connection, sessions: list[str], before_ns: int | None) -> int:
    count = 0
    with history.transaction(conn):
        for sid in sessions:
            count += purge.delete_session_rows(conn, sid, _SESSION_TABLES)
        drop_orphan_terms(conn)
        if before_ns is not None:
            count += purge.delete_quarantine_before(conn, before_ns)
    return count


def _forget_spool(
    paths: StatePaths, writer: IndexWriter, report: ForgetReport, before_ns: int | None
) -> None:
    """Take the forgotten sessions' lines out of every indexed segment; the other sessions'
    lines stay, so that a rebuild from the spool still gives them back. With a date, the
    hours before it keep only the lines of the sessions that stay in the index (not those of
    sessions retention dropped already, nor lines that are no event at all)."""
    conn = writer.conn
    known = history.active_files(conn)
    staying = frozenset(query.session_ids_active_since(conn, before_ns or 0) if before_ns else ())
    try:
        names = sorted(n for n in os.listdir(paths.spool) if n.endswith(".jsonl"))
    except FileNotFoundError:
        return
    for name in names:
        if before_ns is not None and _before(name, before_ns):
            drop = _not_of(staying)
        else:
            drop = _of(report.sessions)
        rewrite_segment(conn, paths, name, known.get(name), report.spool, drop, writer.pass_file)


def _of(sessions: list[str]) -> Callable[[bytes], bool]:
    """Whether a spool line goes: its event is of a forgotten session, or it is no event (a
    line the quarantine holds) and names one."""
    forgotten = frozenset(sessions)
    needles = [f'"{sid}"'.encode() for sid in sessions]

    def drop(line: bytes) -> bool:
        mentions = any(n in line for n in needles)
        # Only a \u escape could spell a session id otherwise: its characters are ASCII.
        if not (mentions or (forgotten and b"\\u" in line)):
            return False
        session = session_of(line)
        return mentions if session is None else session in forgotten

    return drop


def _not_of(staying: frozenset[str]) -> Callable[[bytes], bool]:
    """Whether a spool line of an hour before the date goes: it is not an event of a session
    that stays."""

    def drop(line: bytes) -> bool:
        return session_of(line) not in staying

    return drop


def _before(name: str, before_ns: int) -> bool:
    """True if the hour segment `name` ends before `before_ns`."""
    if not is_segment_name(name):
        return False
    try:
        hour = calendar.timegm(time.strptime(name[:11], "%Y%m%dT%H"))
    except ValueError:
        return False
    return (hour + 3600) * 10**9 <= before_ns


def _parse_date(text: str) -> int:
    for fmt in ("%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M"):
        try:
            ns = calendar.timegm(time.strptime(text, fmt)) * 10**9
        except ValueError:
            continue
        # Times are 64-bit SQLite integers: a date outside them means nothing or everything.
        return max(0, min(ns, 2**63 - 1))
    raise CtxdError(f"--before {text!r} is not a date: use YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC)")


def cmd_forget(args: argparse.Namespace) -> int:
    """Delete a session, or everything before a date, from every place ctxd keeps it."""
    if (args.session is None) == (args.before is None):
        raise CtxdError("give a session id or --before DATE (one of the two)")
    before_ns = _parse_date(args.before) if args.before is not None else None
    paths = state_paths(args)
    if not paths.index_db.exists():
        raise CtxdError(f"no index in {paths.root}: nothing to forget")
    report = forget(paths, args.session, before_ns)
    spool = report.spool
    kept = spool.segments_kept_unindexed
    note = f"; kept {len(kept)} segments not yet indexed: run ctxd ingest, then again"
    print(
        f"forgot {len(report.sessions)} sessions: {report.rows} index rows and "
        f"{spool.lines_removed} spool lines deleted ({len(spool.segments_rewritten)} segments "
        f"rewritten, {len(spool.segments_deleted)} deleted)" + (note if kept else "")
    )
    from summarizer.cli.commands.team import ship_deletions

    team = ship_deletions(paths)  # the team store's copy goes too ("" without one)
    if team:
        print(team)
    return 0
