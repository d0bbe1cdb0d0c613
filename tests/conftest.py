"""Shared fixtures; the helper functions themselves live in tests/helpers.py."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# `from helpers import ...` works however pytest was started (rootdir, -p, python -m pytest).
sys.path.insert(0, str(Path(__file__).resolve().parent))
# tests/indexer/, tests/summarizer/ and tests/ctxd_hook/ mirror the packages: the real packages
# (the checkout's root, and plugin/ for the hook's) must be found before those folders.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugin"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# Some tests reuse another test module's helpers (`from test_daemon import ...`): every folder of
# tests (they mirror the packages' folders) is importable, after the checkout's root.
sys.path.extend(
    sorted({str(t.parent) for t in Path(__file__).parent.resolve().rglob("*/test_*.py")})
)

from helpers import CORPUS
from pg_helpers import PgCluster


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under CI the real-payload corpus is required: its tests must not skip unnoticed."""
    if os.environ.get("CI", "").lower() in ("true", "1") and not (CORPUS / "hooks").is_dir():
        raise pytest.UsageError(
            f"CI=true but the real-payload corpus is missing at {CORPUS}/hooks: put it next to "
            "the checkout (../shared/corpus) or set CTXD_TEST_CORPUS"
        )


@pytest.fixture(autouse=True, scope="session")
def _own_xdg_state_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A hook that cannot spool an event counts it in the user's state folder when it cannot
    write the state dir: in tests, a folder of this run's own, never the real home's."""
    before = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("xdg-state"))
    yield
    if before is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = before


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    """A state directory path under tmp_path, not yet created (the hook or CLI creates it)."""
    return tmp_path / "state"


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """A real PostgreSQL on a Unix socket in a temporary directory (the team tests), stopped
    at the end of the session. Without initdb: skipped, or failed under CI."""
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
    """The DSN of a new, empty database of `pg_cluster` (its superuser connects)."""
    return pg_cluster.dsn(pg_cluster.create_database())
