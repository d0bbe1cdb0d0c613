"""How shipping stands: what waits locally, the last success and error, and the server's view."""

from __future__ import annotations

from typing import Any

from indexer import Config, StatePaths, changes, query
from indexer import iso_utc as _iso
from summarizer.memory import changes as memory_changes
from summarizer.team.errors import TeamError
from summarizer.team.identity import identity, settings
from summarizer.team.pg import connect, masked, translate_errors
from summarizer.team.schema import check_schema
from summarizer.team.state import read_state

__all__ = ["team_status"]


def team_status(
    paths: StatePaths, config: Config, *, probe: bool, environ: dict[str, str] | None = None
) -> dict[str, Any]:
    """Everything `ctxd team status` shows, as a dict. `probe`: also ask the database (one
    connection, `[team] connect_timeout_s` at most); without it nothing leaves the machine."""
    team = settings(config, environ)
    report: dict[str, Any] = {"configured": team.enabled}
    if not team.enabled:
        return report
    who = identity(paths, config)
    report.update(
        dsn=masked(team.dsn),
        project=who.project,
        machine_id=who.machine_id,
        user=who.user,
        host=who.host,
    )
    state = read_state(paths)
    report.update(
        entry_cursor=state.entry_cursor if state else 0,
        rows_shipped=state.rows_shipped if state else 0,
        last_ship=_iso(state.last_ship_ns) if state and state.last_ship_ns else None,
        last_error=(state.last_error or None) if state else None,
        error_since=_iso(state.error_since_ns) if state and state.last_error else None,
        retry_at=_iso(state.retry_at_ns) if state and state.last_error else None,
        failures=state.failures if state else 0,
    )
    report.update(_waiting(paths, state))
    if probe:
        report["server"] = _probe(team.dsn, config, who.machine_id, who.project)
    return report


def _waiting(paths: StatePaths, state: Any) -> dict[str, Any]:
    """What the local index holds that the database has not confirmed (by the local copy of
    its cursors): entries, deletions, and whether the memory moved on."""
    conn = query.connect_readonly(paths.index_db)
    if conn is None:
        return {"waiting_entries": 0, "waiting_deletions": 0, "memory_waiting": False}
    try:
        with changes.snapshot(conn):
            same_index = state is not None and state.index_id == changes.index_id(conn)
            cursor = state.entry_cursor if same_index else 0
            seq = state.purge_seq if same_index else 0
            mark = state.memory_mark if same_index else -1
            log = changes.purges_after(conn, seq)
            return {
                "waiting_entries": changes.count_after(conn, cursor),
                "waiting_deletions": len(log.purges) if same_index else 0,
                "memory_waiting": memory_changes.watermark(conn) != mark,
            }
    finally:
        conn.close()


def _probe(dsn: str, config: Config, machine_id: str, project: str) -> dict[str, Any]:
    try:
        conn = connect(dsn, config.team.connect_timeout_s, autocommit=True)
    except TeamError as e:
        return {"reachable": False, "error": str(e)}
    try:
        version = check_schema(conn)
        with translate_errors("reading the team store's counts"):
            row = conn.execute(
                "SELECT entry_cursor, rows_shipped FROM ctxd.machines WHERE machine_id = %s",
                (machine_id,),
            ).fetchone()
            mine = conn.execute(
                "SELECT count(*) FROM ctxd.entries WHERE machine_id = %s", (machine_id,)
            ).fetchone()[0]
            machines, users = conn.execute(
                "SELECT count(*), count(DISTINCT user_name) FROM ctxd.machines WHERE project = %s",
                (project,),
            ).fetchone()
        return {
            "reachable": True,
            "schema_version": version,
            "entry_cursor": int(row[0]) if row else 0,
            "machine_entries": int(mine),
            "project_machines": int(machines),
            "project_users": int(users),
        }
    except TeamError as e:
        return {"reachable": True, "error": str(e)}
    finally:
        conn.close()
