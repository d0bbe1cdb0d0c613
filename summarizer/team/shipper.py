"""Shipping: what ingest committed, copied to the team database exactly once.

One batch is one PostgreSQL transaction: it locks this machine's cursor row, applies the
deletions recorded locally since the row's purge sequence, inserts the entries after its
entry cursor (`ON CONFLICT (machine_id, entry_id) DO NOTHING`), upserts those entries'
sessions and agents, and moves the cursors, all or nothing. The local reads of a batch share
one SQLite snapshot, deletions read before entries, so an entry deleted meanwhile is either
absent from the batch or deleted by a later one. The local state file is written after the
commit only. docs/team.md gives the whole argument.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from indexer import Config, StatePaths, changes, query
from summarizer.memory import changes as memory_changes
from summarizer.team import rows as team_rows
from summarizer.team.identity import Identity, identity
from summarizer.team.pg import connect, translate_errors
from summarizer.team.schema import check_schema
from summarizer.team.state import ShipState, record_success

if TYPE_CHECKING:
    import sqlite3

__all__ = ["ShipReport", "Shipper"]

log = logging.getLogger("ctxd.team")

_LOCK = (
    "SELECT index_id, entry_cursor, purge_seq, memory_mark, rows_shipped, project, user_name"
    " FROM ctxd.machines WHERE machine_id = %s FOR UPDATE"
)
_TABLES = ("entries", "agents", "sessions", "memory")
# Per table: its temporary twin (rows arrive there by COPY, then move in one statement), the
# columns shipped, and the conflict target; sessions, agents and memory items are updated in
# place, entries never (an entry is immutable once stored).
_SHIPPED = {
    "entries": (team_rows.ENTRY_TEAM_COLUMNS, ("machine_id", "entry_id"), False),
    "sessions": (team_rows.SESSION_TEAM_COLUMNS, ("machine_id", "session_id"), True),
    "agents": (team_rows.AGENT_TEAM_COLUMNS, ("machine_id", "session_id", "agent_id"), True),
    "memory": (team_rows.MEMORY_TEAM_COLUMNS, ("machine_id", "kind", "item_key"), True),
}


@dataclass
class ShipReport:
    """What one `ship` call did."""

    entries: int = 0  # entries inserted
    purges: int = 0  # local deletions applied
    memory_items: int = 0  # memory items inserted or updated
    batches: int = 0
    resets: int = 0  # times this machine's copy was dropped and shipped again (a new index)
    cursor: int = 0  # the entry cursor the database holds now


@dataclass
class _Cursor:
    index_id: str
    entry_cursor: int
    purge_seq: int
    memory_mark: int
    rows_shipped: int
    project: str
    user: str


class _Inconsistent(Exception):
    """The local snapshot is behind what the database already holds of this machine."""


class Shipper:
    """Ships one state directory's index; holds a read-only SQLite connection and a
    PostgreSQL connection between calls (`close` releases both)."""

    def __init__(
        self, paths: StatePaths, config: Config, dsn: str, who: Identity | None = None
    ) -> None:
        self.paths = paths
        self.config = config
        self.dsn = dsn
        self.who = who or identity(paths, config)
        self._local: sqlite3.Connection | None = None
        self._pg: Any = None
        # The cursors the database confirmed last (None: not known in this process yet).
        self.confirmed: ShipState | None = None

    def pending(self) -> bool:
        """True if the local index holds entries, deletions or memory the database has not
        confirmed (read locally: no connection to the database)."""
        local = self._local_conn()
        if local is None:
            return False
        done = self.confirmed
        if done is None:
            return True
        with changes.snapshot(local):
            return (
                changes.index_id(local) != done.index_id
                or changes.top_entry_id(local) > done.entry_cursor
                or changes.purges_after(local, done.purge_seq).last_seq > done.purge_seq
                or memory_changes.watermark(local) != done.memory_mark
            )

    def close(self) -> None:
        """Close both connections (the next call opens them again)."""
        if self._local is not None:
            self._local.close()
            self._local = None
        self.drop_connection()

    def drop_connection(self) -> None:
        """Forget the database connection (after an error: the next call reconnects)."""
        pg, self._pg = self._pg, None
        if pg is not None:
            try:
                pg.close()
            except Exception:
                log.debug("closing the team connection failed", exc_info=True)

    def ship(
        self, *, max_batches: int | None = None, should_stop: Callable[[], bool] | None = None
    ) -> ShipReport:
        """Ship batches until nothing is left (or `max_batches`), then the memory items."""
        report = ShipReport()
        local = self._local_conn()
        if local is None:
            return report
        retried = False
        while max_batches is None or report.batches < max_batches:
            if should_stop is not None and should_stop():
                return report
            try:
                moved = self._batch(local, report, reset_if_behind=retried)
            except _Inconsistent:
                retried = True  # once more on a fresh snapshot, then copy afresh
                continue
            retried = False
            if not moved:
                break
        self._ship_memory(local, report, force=report.purges > 0)
        return report

    # --- one batch --------------------------------------------------------------------------

    def _batch(self, local: sqlite3.Connection, report: ShipReport, reset_if_behind: bool) -> bool:
        pg = self._connection()
        cfg = self.config.team
        with changes.snapshot(local):
            index_id = changes.index_id(local)
            if not index_id:
                return False  # no writer of this version opened the index yet
            with translate_errors("shipping to the team database"), pg.transaction():
                cur = self._lock_machine(pg)
                purge_log = changes.purges_after(local, cur.purge_seq)
                behind = cur.purge_seq > purge_log.last_seq
                if (
                    cur.index_id != index_id
                    or not purge_log.complete
                    or (behind and reset_if_behind)
                ):
                    report.resets += bool(cur.index_id)  # not the first shipment
                    self._reset(pg, cur, index_id, purge_log.last_seq)
                    purge_log = changes.PurgeLog([], purge_log.last_seq, True)
                elif behind:
                    raise _Inconsistent
                self._relabel(pg, cur)
                cursor = cur.entry_cursor
                for purge in purge_log.purges:
                    self._apply_purge(pg, purge)
                    # Ids above what the deletion left may be given again to new entries.
                    cursor = min(cursor, purge.max_entry_id)
                if cursor > changes.top_entry_id(local):
                    if not reset_if_behind:
                        raise _Inconsistent
                    self._reset(pg, cur, index_id, purge_log.last_seq)
                    report.resets += 1
                    cursor = 0
                found = changes.entry_rows_after(local, cursor, cfg.batch_rows, cfg.batch_bytes)
                inserted = self._ship_entries(pg, local, found)
                cursor = int(found[-1][0]) if found else cursor
                # Every deletion of the snapshot is applied now (or a reset made them moot).
                purge_seq = max(cur.purge_seq, purge_log.last_seq)
                shipped = cur.rows_shipped + inserted
                pg.execute(
                    "UPDATE ctxd.machines SET index_id = %s, entry_cursor = %s, purge_seq = %s,"
                    " memory_mark = %s, rows_shipped = %s, project = %s, user_name = %s,"
                    " host = %s, last_ship = now() WHERE machine_id = %s",
                    (
                        index_id,
                        cursor,
                        purge_seq,
                        cur.memory_mark,
                        shipped,
                        self.who.project,
                        self.who.user,
                        self.who.host,
                        self.who.machine_id,
                    ),
                )
            # Committed: only now does the local copy of the cursors move.
            self.confirmed = record_success(
                self.paths,
                index_id=index_id,
                entry_cursor=cursor,
                purge_seq=purge_seq,
                memory_mark=cur.memory_mark,
                rows_shipped=shipped,
            )
        report.entries += inserted
        report.purges += len(purge_log.purges)
        report.cursor = cursor
        if found or purge_log.purges:
            report.batches += 1
            return True
        return False

    def _lock_machine(self, pg: Any) -> _Cursor:
        """This machine's cursor row, locked until the transaction ends (created if new)."""
        who = self.who
        row = pg.execute(_LOCK, (who.machine_id,)).fetchone()
        if row is None:
            pg.execute(
                "INSERT INTO ctxd.machines(machine_id, project, user_name, host)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (machine_id) DO NOTHING",
                (who.machine_id, who.project, who.user, who.host),
            )
            row = pg.execute(_LOCK, (who.machine_id,)).fetchone()
        return _Cursor(
            index_id=str(row[0]),
            entry_cursor=int(row[1]),
            purge_seq=int(row[2]),
            memory_mark=int(row[3]),
            rows_shipped=int(row[4]),
            project=str(row[5]),
            user=str(row[6]),
        )

    def _reset(self, pg: Any, cur: _Cursor, index_id: str, purge_seq: int) -> None:
        """Drop this machine's rows: its index was replaced (or fell too far behind the
        deletion log), so everything it holds now is shipped again from the first entry."""
        if cur.index_id:
            log.warning(
                "the team store held this machine's rows of another index (or missed "
                "deletions); shipping everything again"
            )
        for table in _TABLES:
            pg.execute(f"DELETE FROM ctxd.{table} WHERE machine_id = %s", (self.who.machine_id,))
        cur.index_id, cur.entry_cursor, cur.purge_seq, cur.memory_mark = index_id, 0, purge_seq, 0
        cur.project, cur.user = self.who.project, self.who.user

    def _relabel(self, pg: Any, cur: _Cursor) -> None:
        """A changed `[team] project` or `user`: every row of this machine carries the new one."""
        if (cur.project, cur.user) == (self.who.project, self.who.user):
            return
        for table in _TABLES:
            pg.execute(
                f"UPDATE ctxd.{table} SET project = %s, user_name = %s WHERE machine_id = %s",
                (self.who.project, self.who.user, self.who.machine_id),
            )

    def _apply_purge(self, pg: Any, purge: changes.Purge) -> None:
        """What a local deletion removed, removed from this machine's rows."""
        mid = self.who.machine_id
        if purge.kind == "session":
            for table in _TABLES:
                pg.execute(
                    f"DELETE FROM ctxd.{table} WHERE machine_id = %s AND session_id = %s",
                    (mid, purge.session_id),
                )
        elif purge.kind == "before":
            cutoff = purge.before_ns
            pg.execute(
                "DELETE FROM ctxd.entries WHERE machine_id = %s AND ts_ns < %s", (mid, cutoff)
            )
            pg.execute(
                "DELETE FROM ctxd.agents a USING ctxd.sessions s WHERE a.machine_id = %s"
                " AND s.machine_id = a.machine_id AND s.session_id = a.session_id"
                " AND s.last_ns < %s",
                (mid, cutoff),
            )
            pg.execute(
                "DELETE FROM ctxd.sessions WHERE machine_id = %s AND last_ns < %s", (mid, cutoff)
            )
        else:  # a kind a newer ctxd wrote into this index: never skip a deletion silently
            raise ValueError(f"unknown deletion kind {purge.kind!r} in the index's purge log")

    def _ship_entries(self, pg: Any, local: sqlite3.Connection, found: Sequence[Any]) -> int:
        if not found:
            return 0
        inserted = _copy_in(pg, "entries", team_rows.entry_rows(self.who, found))
        sessions = sorted({str(r[2]) for r in found})
        _copy_in(
            pg, "sessions", team_rows.session_rows(self.who, changes.session_rows(local, sessions))
        )
        _copy_in(pg, "agents", team_rows.agent_rows(self.who, changes.agent_rows(local, sessions)))
        return inserted

    # --- memory -----------------------------------------------------------------------------

    def _ship_memory(self, local: sqlite3.Connection, report: ShipReport, force: bool) -> None:
        """Decisions, constraints and failures changed since the last memory shipment (all of
        them after a reset); deletions (forget) are reconciled by the full list of keys."""
        pg = self._connection()
        with changes.snapshot(local):
            index_id = changes.index_id(local)
            mark = memory_changes.watermark(local)
            with translate_errors("shipping memory to the team database"), pg.transaction():
                cur = self._lock_machine(pg)
                if cur.index_id != index_id or (mark == cur.memory_mark and not force):
                    return
                since = cur.memory_mark if mark >= cur.memory_mark else 0
                found = memory_changes.changed_since(local, since)
                report.memory_items += _copy_in(
                    pg, "memory", team_rows.memory_rows(self.who, found.items)
                )
                mid = self.who.machine_id
                pg.execute(
                    "UPDATE ctxd.memory SET active = false WHERE machine_id = %s"
                    " AND kind = 'constraint' AND active AND NOT (item_key = ANY(%s))",
                    (mid, found.active_constraints),
                )
                pg.execute(
                    "DELETE FROM ctxd.memory WHERE machine_id = %s"
                    " AND NOT (kind || ':' || item_key = ANY(%s))",
                    (mid, memory_changes.all_keys(local)),
                )
                pg.execute(
                    "UPDATE ctxd.machines SET memory_mark = %s WHERE machine_id = %s",
                    (found.watermark, mid),
                )
            self.confirmed = record_success(
                self.paths,
                index_id=index_id,
                entry_cursor=cur.entry_cursor,
                purge_seq=cur.purge_seq,
                memory_mark=found.watermark,
                rows_shipped=cur.rows_shipped,
            )

    # --- connections ------------------------------------------------------------------------

    def _local_conn(self) -> sqlite3.Connection | None:
        if self._local is None:
            self._local = query.connect_readonly(self.paths.index_db)
        return self._local

    def connection(self) -> Any:
        """The database connection (opened, and the schema checked, on first use)."""
        return self._connection()

    def _connection(self) -> Any:
        if self._pg is None:
            pg = connect(self.dsn, self.config.team.connect_timeout_s, autocommit=True)
            try:
                check_schema(pg)
                with translate_errors("preparing the shipping tables"):
                    for table, (columns, _key, _update) in _SHIPPED.items():
                        pg.execute(
                            f"CREATE TEMP TABLE IF NOT EXISTS ship_{table} ON COMMIT DELETE ROWS"
                            f" AS SELECT {', '.join(columns)} FROM ctxd.{table} WITH NO DATA"
                        )
            except BaseException:
                pg.close()
                raise
            self._pg = pg
        return self._pg


def _copy_in(pg: Any, table: str, found: Sequence[Sequence[object]]) -> int:
    """COPY `found` into the table's temporary twin, then move it in one statement; return
    how many rows were inserted or updated."""
    if not found:
        return 0
    columns, key, update = _SHIPPED[table]
    names = ", ".join(columns)
    with pg.cursor() as cur:
        with cur.copy(f"COPY ship_{table} ({names}) FROM STDIN") as copy:
            for row in found:
                copy.write_row(row)
        if update:
            sets = ", ".join(f"{c} = EXCLUDED.{c}" for c in columns if c not in key)
            action = f"DO UPDATE SET {sets}"
        else:
            action = "DO NOTHING"
        cur.execute(
            f"INSERT INTO ctxd.{table} ({names}) SELECT {names} FROM ship_{table}"
            f" ON CONFLICT ({', '.join(key)}) {action}"
        )
        # The twin empties at commit (ON COMMIT DELETE ROWS): each is filled once a transaction.
        return int(cur.rowcount)
