"""Reading the team store: its sessions and memory items of one project, every machine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from indexer import Config, StatePaths, iso_utc
from summarizer.resume.sessions import SessionInfo, session_title, stamp_of
from summarizer.team.identity import project_name, require_dsn
from summarizer.team.pg import connect, translate_errors
from summarizer.team.schema import check_schema

__all__ = [
    "TeamItem",
    "TeamSession",
    "open_team",
    "sessions",
    "sessions_where",
    "team_items",
]


@dataclass(frozen=True)
class TeamSession:
    """A session of the team: the local catalog row plus the machine and user."""

    info: SessionInfo
    machine: str
    user: str
    machine_id: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.info.to_dict(), "machine": self.machine, "user": self.user}


@dataclass(frozen=True)
class TeamItem:
    """A decision, constraint or failure of the team's memory."""

    kind: str
    summary: str
    command: str
    error: str
    prevention: str
    session_id: str
    last_ns: int
    count: int
    active: bool
    machine: str
    user: str
    machine_id: str


def open_team(paths: StatePaths, config: Config) -> tuple[Any, str]:
    """A connection to the team database, its schema checked, and this project's name."""
    conn = connect(require_dsn(config), config.team.connect_timeout_s, autocommit=True)
    try:
        check_schema(conn)
    except BaseException:
        conn.close()
        raise
    return conn, project_name(paths, config)


def sessions(conn: Any, project: str, limit: int | None) -> list[TeamSession]:
    """The project's sessions on every machine, newest start first."""
    return sessions_where(conn, project, "true", [], limit)


def sessions_where(
    conn: Any, project: str, where: str, args: list[Any], limit: int | None
) -> list[TeamSession]:
    """The project's sessions that match `where` (on `s`, the sessions table), newest first."""
    sql = (
        "SELECT s.session_id, s.first_ns, s.last_ns, s.cwd, s.title, s.first_prompt, s.events,"
        " s.failures, s.status, s.end_reason, s.compactions,"
        " (SELECT count(*) FROM ctxd.agents a WHERE a.machine_id = s.machine_id"
        " AND a.session_id = s.session_id), s.machine_id, s.user_name, coalesce(m.host, ''),"
        " s.host"
        " FROM ctxd.sessions s LEFT JOIN ctxd.machines m USING (machine_id)"
        f" WHERE s.project = %s AND {where}"
        " ORDER BY s.first_ns DESC, s.session_id, s.machine_id"
    )
    params: list[Any] = [project, *args]
    if limit is not None:
        sql += " LIMIT %s"
        params.append(limit)
    with translate_errors("listing the team's sessions"):
        rows = conn.execute(sql, params).fetchall()
    return [
        TeamSession(
            SessionInfo(
                session_id=str(r[0]),
                stamp=stamp_of(int(r[1])),
                title=session_title(str(r[4]), str(r[5])),
                cwd=str(r[3]),
                started=iso_utc(int(r[1])),
                last_activity=iso_utc(int(r[2])),
                events=int(r[6]),
                agents=int(r[11]),
                failures=int(r[7]),
                status=str(r[8]),
                end_reason=str(r[9]),
                compactions=int(r[10]),
                host=str(r[15]) or "claude",
            ),
            machine=str(r[14]),
            user=str(r[13]),
            machine_id=str(r[12]),
        )
        for r in rows
    ]


def team_items(
    conn: Any,
    project: str,
    kind: str,
    limit: int,
    *,
    in_force: bool = False,
    other_than: str = "",
    session: str | None = None,
) -> list[TeamItem]:
    """The project's memory items of one kind, newest first (failures: unresolved first).
    `in_force`: only constraints in force and unresolved failures; `other_than`: leave out
    that machine's own."""
    where = "i.project = %s AND i.kind = %s"
    args: list[Any] = [project, kind]
    if in_force:
        where += " AND i.active"
    if other_than:
        where += " AND i.machine_id <> %s"
        args.append(other_than)
    if session:
        where += " AND i.session_id = %s"
        args.append(session)
    order = "i.active DESC, i.last_ns DESC" if kind == "failure" else "i.last_ns DESC"
    with translate_errors("reading the team's memory"):
        rows = conn.execute(
            "SELECT i.summary, i.command, i.error, i.prevention, i.session_id, i.last_ns,"
            " i.count, i.active, coalesce(m.host, ''), i.user_name, i.machine_id"
            " FROM ctxd.memory i LEFT JOIN ctxd.machines m USING (machine_id)"
            f" WHERE {where} ORDER BY {order}, i.item_key LIMIT %s",
            [*args, limit],
        ).fetchall()
    return [
        TeamItem(kind, str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), int(r[5]),
                 int(r[6]), bool(r[7]), str(r[8]), str(r[9]), str(r[10]))
        for r in rows
    ]  # fmt: skip
