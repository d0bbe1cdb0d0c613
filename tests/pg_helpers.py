"""A real PostgreSQL for the team tests and bench: initdb and pg_ctl on a Unix socket in a
temporary directory, run as the `postgres` system user when this process is root.

No TCP listener: clients reach it by the socket only (no network, even loopback). Without
`initdb` the tests skip with that reason, and fail under CI (`.ci/run` installs Debian's
`postgresql` package when it is missing).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

__all__ = ["PgCluster", "find_program"]


def find_program(name: str) -> str | None:
    """A PostgreSQL server program on PATH, else in Debian's versioned folder."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


class PgCluster:
    """One throwaway cluster: `start`, `restart` (also an immediate, crash-like stop),
    `stop`; `create_database` gives each test a database of its own."""

    def __init__(self) -> None:
        initdb, pg_ctl = find_program("initdb"), find_program("pg_ctl")
        if initdb is None or pg_ctl is None:
            raise FileNotFoundError("PostgreSQL's initdb/pg_ctl are not installed")
        self.initdb, self.pg_ctl = initdb, pg_ctl
        self.root = Path(tempfile.mkdtemp(prefix="ctxd-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.as_user: str | None = None
        if os.geteuid() == 0:  # initdb refuses root: the postgres system user runs the server
            self.as_user = "postgres"
            entry = pwd.getpwnam(self.as_user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self.superuser = "postgres"
        self.durable = False

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = list(args)
        if self.as_user is not None:
            cmd = ["runuser", "-u", self.as_user, "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, check=check, timeout=120)

    def init(self) -> None:
        self._run(
            self.initdb, "-D", str(self.data), "-A", "trust", "-U", self.superuser,
            "-E", "UTF8", "--locale=C.UTF-8", "--no-sync",
        )  # fmt: skip

    def start(self) -> None:
        # fsync off (unless `durable`, as the bench sets it): a test cluster needs no
        # durability against power loss; an "immediate" stop (a crash for the server) still
        # recovers from its WAL.
        fsync = "on" if self.durable else "off"
        options = f"-k {self.root} -c listen_addresses='' -c fsync={fsync} -c max_connections=60"
        self._run(self.pg_ctl, "-D", str(self.data), "-l", str(self.log), "-w", "-o", options, "start")

    def stop(self, mode: str = "fast") -> None:
        self._run(self.pg_ctl, "-D", str(self.data), "-m", mode, "-w", "stop", check=False)

    def restart(self, mode: str = "fast") -> None:
        self.stop(mode)
        self.start()

    def dsn(self, dbname: str = "postgres", user: str | None = None) -> str:
        return f"host={self.root} user={user or self.superuser} dbname={dbname}"

    def create_database(self) -> str:
        """A new empty database; its name."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return name

    def destroy(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
