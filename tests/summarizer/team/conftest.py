"""Fixtures of the team tests: one real PostgreSQL for the session, a fresh database per test."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from pg_helpers import PgCluster


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """A PostgreSQL server on a Unix socket in a temporary directory, stopped at the end."""
    try:
        cluster = PgCluster()
    except FileNotFoundError as e:
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(f"{e}: .ci/run installs the postgresql package")
        pytest.skip(f"{e}; install PostgreSQL (Debian: apt-get install postgresql)")
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def team_dsn(pg_cluster: PgCluster) -> str:
    """The DSN of a new, empty database (the cluster's superuser connects)."""
    return pg_cluster.dsn(pg_cluster.create_database())
