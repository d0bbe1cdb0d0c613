"""`ctxd team init`: versioned migrations, idempotent, one transaction each, and a schema newer
than this ctxd is refused; the tables, the search column and the indexes are what the docs say."""

from __future__ import annotations

import threading
from pathlib import Path

import psycopg
import pytest
from helpers import run_cli
from team_helpers import write_config

from indexer.paths import StatePaths
from summarizer.team import schema
from summarizer.team.errors import TeamSchemaError


def test_init_applies_once_and_then_has_nothing_to_do(tmp_path: Path, team_dsn: str) -> None:
    paths = StatePaths(tmp_path / "s")
    write_config(paths, team_dsn)
    first = run_cli("team", "init", state_dir=paths.root)
    assert first.returncode == 0, first.stderr
    assert f"team schema at version {schema.LATEST}" in first.stdout and "applied version 1" in first.stdout
    again = run_cli("team", "init", state_dir=paths.root)
    assert "nothing to do" in again.stdout
    with psycopg.connect(team_dsn) as conn:
        versions = conn.execute("SELECT version FROM ctxd.schema_migrations").fetchall()
    assert versions == [(v,) for v in sorted(schema.MIGRATIONS)]


def test_two_inits_at_once_apply_each_migration_once(team_dsn: str) -> None:
    results: list[object] = []

    def init() -> None:
        with psycopg.connect(team_dsn, autocommit=True) as conn:
            results.append(schema.migrate(conn))

    threads = [threading.Thread(target=init) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    applied = [versions for _version, versions in results]  # type: ignore[misc]
    assert sorted(map(len, applied)) == [0, 0, 1]


def test_a_newer_schema_is_refused(team_dsn: str) -> None:
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        schema.migrate(conn)
        conn.execute("INSERT INTO ctxd.schema_migrations(version) VALUES (%s)", (schema.LATEST + 1,))
        with pytest.raises(TeamSchemaError, match="newer than this ctxd knows"):
            schema.migrate(conn)
        with pytest.raises(TeamSchemaError, match="upgrade ctxd"):
            schema.check_schema(conn)


def test_no_tables_yet_says_to_run_init(team_dsn: str) -> None:
    with (
        psycopg.connect(team_dsn, autocommit=True) as conn,
        pytest.raises(TeamSchemaError, match="run `ctxd team init`"),
    ):
        schema.check_schema(conn)


def test_a_failing_migration_leaves_nothing_behind(team_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = {1: [*schema.MIGRATIONS[1][:5], "SELECT no_such_function()"]}
    monkeypatch.setattr(schema, "MIGRATIONS", broken)
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        with pytest.raises(Exception, match="no_such_function"):
            schema.migrate(conn)
        assert conn.execute("SELECT to_regclass('ctxd.entries')").fetchone()[0] is None
        assert schema.schema_version(conn) == 0


def test_search_column_and_indexes(team_dsn: str) -> None:
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        schema.migrate(conn)
        indexes = {
            name: ddl
            for name, ddl in conn.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'ctxd'"
            )
        }
        assert "USING gin" in indexes["entries_search"] and "search)" in indexes["entries_search"]
        assert "(seq / 4096)" in indexes["entries_search"]  # the arrival block (btree_gin)
        assert "gin_trgm_ops" in indexes["entries_files"] and "gin_trgm_ops" in indexes["entries_command"]
        generated = conn.execute(
            "SELECT attgenerated FROM pg_attribute WHERE attrelid = 'ctxd.entries'::regclass"
            " AND attname = 'search'"
        ).fetchone()
        assert generated == ("s",)
        secured = conn.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = 'ctxd'::regnamespace"
            " AND relkind = 'r' AND relrowsecurity ORDER BY relname"
        ).fetchall()
        assert [r[0] for r in secured] == [
            "agents", "entries", "machines", "memory", "readers", "sessions", "writers",
        ]  # fmt: skip
        # Every row carries machine, user and project.
        for table in ("entries", "sessions", "agents", "memory", "machines"):
            columns = {
                r[0]
                for r in conn.execute(
                    "SELECT column_name FROM information_schema.columns"
                    " WHERE table_schema = 'ctxd' AND table_name = %s",
                    (table,),
                )
            }
            assert {"machine_id", "user_name", "project"} <= columns, table
