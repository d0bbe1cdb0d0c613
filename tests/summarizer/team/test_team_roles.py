"""Who sees what, with real roles and row-level security: a writer per machine inserts only its
own machine's rows, a reader per project sees only that project."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from helpers import run_cli
from pg_helpers import PgCluster
from team_helpers import indexed, team_config, write_config

from indexer.paths import StatePaths
from summarizer.team.errors import TeamPermissionError
from summarizer.team.identity import Identity, identity
from summarizer.team.roles import create_roles, reader_role, writer_role
from summarizer.team.schema import migrate
from summarizer.team.shipper import Shipper

TABLES = ("entries", "sessions", "agents", "machines")


def _who(paths: StatePaths, project: str) -> Identity:
    return identity(paths, team_config(project))


def _dsn(cluster: PgCluster, db: str, role: str) -> str:
    return cluster.dsn(db, user=role)


@pytest.fixture
def three_machines(tmp_path: Path, pg_cluster: PgCluster) -> dict[str, object]:
    """Machines a and c of project A, b of project B, each shipped with its own writer role."""
    db = pg_cluster.create_database()
    owner = pg_cluster.dsn(db)
    machines = {
        "a": (indexed(tmp_path / "a", 300, seed=41), "proj-a"),
        "b": (indexed(tmp_path / "b", 300, seed=42), "proj-b"),
        "c": (indexed(tmp_path / "c", 300, seed=43), "proj-a"),
    }
    with psycopg.connect(owner, autocommit=True) as conn:
        migrate(conn)
        for paths, project in machines.values():
            create_roles(conn, _who(paths, project))
    ids = {}
    for name, (paths, project) in machines.items():
        who = _who(paths, project)
        ids[name] = who.machine_id
        shipper = Shipper(paths, team_config(project), _dsn(pg_cluster, db, writer_role(who.machine_id)))
        shipper.ship()
        shipper.close()
    return {"db": db, "ids": ids, "machines": machines}


def _count(dsn: str, table: str, where: str = "true", *args: object) -> int:
    with psycopg.connect(dsn) as conn:
        return int(conn.execute(f"SELECT count(*) FROM ctxd.{table} WHERE {where}", args).fetchone()[0])


def test_a_reader_sees_its_project_only(pg_cluster: PgCluster, three_machines: dict) -> None:
    db, ids = three_machines["db"], three_machines["ids"]
    reader_a = _dsn(pg_cluster, db, reader_role("proj-a"))
    reader_b = _dsn(pg_cluster, db, reader_role("proj-b"))
    for table in TABLES:
        assert _count(reader_a, table, "project = 'proj-b'") == 0, table
        assert _count(reader_b, table, "project = 'proj-a'") == 0, table
        assert _count(reader_a, table, "machine_id = %s", ids["c"]) > 0, table
    assert _count(reader_a, "entries") == 600 and _count(reader_b, "entries") == 300
    with psycopg.connect(reader_a) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("DELETE FROM ctxd.entries")  # a reader writes nothing


def test_a_writer_touches_only_its_machine(pg_cluster: PgCluster, three_machines: dict) -> None:
    db, ids = three_machines["db"], three_machines["ids"]
    writer_a = _dsn(pg_cluster, db, writer_role(ids["a"]))
    with psycopg.connect(writer_a) as conn:
        # It reads its project (it is a member of the project's reader) and nothing else.
        assert conn.execute("SELECT count(*) FROM ctxd.entries").fetchone()[0] == 600
        assert conn.execute(
            "SELECT count(*) FROM ctxd.entries WHERE machine_id = %s", (ids["b"],)
        ).fetchone()[0] == 0
        # Another machine's rows can be neither changed nor deleted: row-level security
        # hides them from UPDATE and DELETE ...
        assert conn.execute(
            "UPDATE ctxd.entries SET text = 'x' WHERE machine_id = %s", (ids["c"],)
        ).rowcount == 0
        assert conn.execute(
            "DELETE FROM ctxd.sessions WHERE machine_id = %s", (ids["c"],)
        ).rowcount == 0
        conn.commit()
        # ... and refuses an INSERT under its id.
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(
                "INSERT INTO ctxd.sessions(machine_id, session_id, project, user_name, first_ns,"
                " last_ns, cwd, title, first_prompt, events, failures, status, end_reason,"
                " compactions) VALUES (%s, 'forged', 'proj-a', 'mallory', 0, 0, '', '', '', 0,"
                " 0, 'active', '', 0)",
                (ids["c"],),
            )
    owner = pg_cluster.dsn(db)
    assert _count(owner, "entries", "machine_id = %s AND text = 'x'", ids["c"]) == 0
    assert _count(owner, "sessions", "machine_id = %s", ids["c"]) > 0


def test_a_machine_cannot_ship_as_another(pg_cluster: PgCluster, three_machines: dict) -> None:
    db, ids = three_machines["db"], three_machines["ids"]
    paths_c, _project = three_machines["machines"]["c"]
    # Machine c's state directory with machine a's credentials: every row carries c's id.
    borrowed = Shipper(paths_c, team_config("proj-a"), _dsn(pg_cluster, db, writer_role(ids["a"])))
    with pytest.raises(TeamPermissionError, match="row-level security"):
        borrowed.ship()
    borrowed.close()


def test_init_roles_prints_the_roles_once_and_keeps_them(tmp_path: Path, team_dsn: str) -> None:
    paths = StatePaths(tmp_path / "p")
    write_config(paths, team_dsn, "proj-r")
    first = run_cli("team", "init", "--roles", state_dir=paths.root)
    assert first.returncode == 0, first.stderr
    who = _who(paths, "proj-r")
    writer, reader = writer_role(who.machine_id), reader_role("proj-r")
    assert f"created writer role {writer} for {who.machine_id}, password " in first.stdout
    assert f"created reader role {reader} for proj-r, password " in first.stdout
    again = run_cli("team", "init", "--roles", state_dir=paths.root)
    assert again.returncode == 0, again.stderr
    assert f"kept writer role {writer}" in again.stdout and "created" not in again.stdout
    with psycopg.connect(team_dsn) as conn:
        # The password is stored as a SCRAM verifier: the server never saw it in clear.
        stored = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s", (writer,))
        assert stored.fetchone()[0].startswith("SCRAM-SHA-256$")
