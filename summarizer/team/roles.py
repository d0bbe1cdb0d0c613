"""Database roles for the team store: a writer per machine, a reader per project.

The schema's row-level security policies (summarizer/team/schema.py) let a role touch only
the rows of the machines `ctxd.writers` maps it to, and read only the projects `ctxd.readers`
maps it to; membership counts, so a machine's writer, made a member of its project's reader,
reads its teammates' rows too. Two group roles hold the table privileges.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

from summarizer.team.identity import Identity
from summarizer.team.pg import driver, translate_errors

__all__ = [
    "READER_GROUP",
    "WRITER_GROUP",
    "CreatedRole",
    "create_roles",
    "reader_role",
    "writer_role",
]

WRITER_GROUP = "ctxd_team_writer"
READER_GROUP = "ctxd_team_reader"
_DATA = "ctxd.machines, ctxd.entries, ctxd.sessions, ctxd.agents, ctxd.memory"
_MAPS = "ctxd.writers, ctxd.readers, ctxd.schema_migrations"


@dataclass(frozen=True)
class CreatedRole:
    """A login role `create_roles` made or found."""

    name: str
    kind: str  # "writer" | "reader"
    scope: str  # the machine id or the project
    password: str  # "" when the role existed already (its password was left alone)


def writer_role(machine_id: str) -> str:
    """The writer role of a machine: `ctxd_w_` and the first 16 hex digits of its id."""
    return f"ctxd_w_{machine_id[:16]}"


def reader_role(project: str) -> str:
    """The reader role of a project: `ctxd_r_` and 16 hex digits of the project's hash."""
    return f"ctxd_r_{hashlib.sha256(project.encode()).hexdigest()[:16]}"


def create_roles(conn: Any, who: Identity) -> list[CreatedRole]:
    """Create (or complete) the groups, this machine's writer and this project's reader, in
    one transaction. Needs a role that may create roles (CREATEROLE) and owns the tables."""
    made: list[CreatedRole] = []
    with translate_errors("creating the team roles"), conn.transaction():
        for group in (WRITER_GROUP, READER_GROUP):
            _ensure_role(conn, group, login=False)
            conn.execute(_sql("GRANT USAGE ON SCHEMA ctxd TO {}", group))
            conn.execute(_sql(f"GRANT SELECT ON {_DATA}, {_MAPS} TO {{}}", group))
        conn.execute(_sql(f"GRANT INSERT, UPDATE, DELETE ON {_DATA} TO {{}}", WRITER_GROUP))
        writer = writer_role(who.machine_id)
        reader = reader_role(who.project)
        for name, kind, scope, group in (
            (writer, "writer", who.machine_id, WRITER_GROUP),
            (reader, "reader", who.project, READER_GROUP),
        ):
            password = _ensure_role(conn, name, login=True)
            conn.execute(_sql("GRANT {} TO {}", group, name))
            made.append(CreatedRole(name, kind, scope, password))
        conn.execute(_sql("GRANT {} TO {}", reader, writer))  # a machine reads its project
        conn.execute(
            "INSERT INTO ctxd.writers(role_name, machine_id) VALUES (%s, %s)"
            " ON CONFLICT (role_name) DO UPDATE SET machine_id = EXCLUDED.machine_id",
            (writer, who.machine_id),
        )
        conn.execute(
            "INSERT INTO ctxd.readers(role_name, project) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (reader, who.project),
        )
    return made


def _ensure_role(conn: Any, name: str, *, login: bool) -> str:
    """Create the role if missing; return its new password ("" if it existed or has none)."""
    if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone():
        return ""
    if not login:
        conn.execute(_sql("CREATE ROLE {} NOLOGIN", name))
        return ""
    password = secrets.token_urlsafe(24)
    # Hashed here (SCRAM-SHA-256, as psql's \password does): the server, its logs and its
    # statistics never see the password itself.
    verifier = conn.pgconn.encrypt_password(password.encode(), name.encode(), b"scram-sha-256")
    sql = driver().sql
    conn.execute(
        sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
            sql.Identifier(name), sql.Literal(verifier.decode())
        )
    )
    return password


def _sql(template: str, *names: str) -> Any:
    """`template` with each `{}` a quoted role name."""
    sql = driver().sql
    return sql.SQL(template).format(*(sql.Identifier(n) for n in names))
