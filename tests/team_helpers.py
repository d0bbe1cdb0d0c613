"""Helpers of the team tests: state directories with corpus-shaped events, and what the team
store and the local index hold, compared by count and checksum."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import psycopg
from test_crash import generate

from indexer.config import Config, parse_config
from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up


def team_config(project: str = "proj-a", **team: Any) -> Config:
    """A Config with a [team] table (the dsn comes from the test, never a default)."""
    lines = [f"project = {project!r}".replace("'", '"')]
    for key, value in team.items():
        text = str(value).lower() if isinstance(value, bool) else repr(value).replace("'", '"')
        lines.append(f"{key} = {text}")
    return parse_config(("[team]\n" + "\n".join(lines) + "\n").encode())


def write_config(paths: StatePaths, dsn: str, project: str = "proj-a", **team: Any) -> None:
    """`.ctxd/config.toml` with [team] dsn and project (what a user writes)."""
    paths.ensure()
    lines = [f'dsn = "{dsn}"', f'project = "{project}"']
    lines += [f"{k} = {str(v).lower() if isinstance(v, bool) else v}" for k, v in team.items()]
    paths.config.write_text("[team]\n" + "\n".join(lines) + "\n")


def spool_events(
    paths: StatePaths, n: int, seed: int, *, first: int = 0, total: int | None = None
) -> None:
    """Append events `first`..`n` of a corpus-shaped spool of `total` events (default `n`;
    the same `total` and seed give the same events) to the spool."""
    paths.ensure()
    for segment, line in generate(total or n, seed).lines[first:n]:
        with open(paths.spool / segment, "ab") as f:
            f.write(line)


def indexed(root: Path, n: int, seed: int) -> StatePaths:
    """A state directory with `n` corpus-shaped events, indexed."""
    paths = StatePaths(root)
    spool_events(paths, n, seed)
    catch_up(paths, Config())
    return paths


def local_digest(paths: StatePaths) -> tuple[int, str]:
    """(entries, checksum of `id:ts_ns` in id order) of the local index."""
    conn = sqlite3.connect(f"file:{paths.index_db}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT id, ts_ns FROM entries ORDER BY id").fetchall()
    finally:
        conn.close()
    text = ",".join(f"{i}:{t}" for i, t in rows)
    return len(rows), hashlib.md5(text.encode()).hexdigest()


def team_digest(dsn: str, machine_id: str) -> tuple[int, str]:
    """(entries, checksum of `entry_id:ts_ns` in id order) of one machine in the team store."""
    with psycopg.connect(dsn) as conn:
        count, text = conn.execute(
            "SELECT count(*), coalesce(string_agg(entry_id || ':' || ts_ns, ','"
            " ORDER BY entry_id), '') FROM ctxd.entries WHERE machine_id = %s",
            (machine_id,),
        ).fetchone()
    return int(count), hashlib.md5(text.encode()).hexdigest()


def team_scalar(dsn: str, sql: str, *args: Any) -> Any:
    """The first column of the first row of a query against the team store."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute(sql, args).fetchone()
    return None if row is None else row[0]
