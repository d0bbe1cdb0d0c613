"""`ctxd team …`: create the team tables and roles, ship by hand, show how shipping stands."""

from __future__ import annotations

import argparse
import json
from typing import Any

from indexer import Config, CtxdError, StatePaths, catch_up, load_config
from summarizer.common.cliargs import state_paths
from summarizer.team.identity import identity, require_dsn
from summarizer.team.pg import connect, driver, masked

__all__ = ["cmd_team", "ship_deletions", "status_lines"]


def cmd_team(args: argparse.Namespace) -> int:
    """Run one `ctxd team` verb."""
    paths = state_paths(args)
    config = load_config(paths.config)
    if args.verb == "status":
        return _status(paths, config, args.json)
    dsn = require_dsn(config)
    driver()  # without psycopg: say how to install it before anything else
    if args.verb == "init":
        return _init(paths, config, dsn, args.roles)
    return _ship(paths, config, dsn)


def _init(paths: StatePaths, config: Config, dsn: str, roles: bool) -> int:
    from summarizer.team.schema import migrate

    conn = connect(dsn, config.team.connect_timeout_s, autocommit=True)
    try:
        version, applied = migrate(conn)
        done = f"applied version {', '.join(map(str, applied))}" if applied else "nothing to do"
        print(f"team schema at version {version} in {masked(dsn)} ({done})")
        if roles:
            from summarizer.team.roles import create_roles

            who = identity(paths, config)
            for role in create_roles(conn, who):
                what = f"{role.kind} role {role.name} for {role.scope}"
                if role.password:
                    print(f"created {what}, password {role.password} (shown once: keep it)")
                else:
                    print(f"kept {what} (it existed; its password is unchanged)")
            print(
                "use the writer role in this machine's [team] dsn; give the reader role to "
                "teammates who only read this project"
            )
    finally:
        conn.close()
    return 0


def _ship(paths: StatePaths, config: Config, dsn: str) -> int:
    from summarizer.team.shipper import Shipper

    if not paths.index_db.exists():
        raise CtxdError(f"nothing recorded yet in {paths.root}: nothing to ship")
    catch_up(paths, config)  # what the spool holds first (or wait for the daemon's ingest)
    shipper = Shipper(paths, config, dsn)
    try:
        report = shipper.ship()
    finally:
        shipper.close()
    again = f"; shipped everything again ({report.resets} new index)" if report.resets else ""
    print(
        f"shipped {report.entries} entries, {report.purges} deletions and "
        f"{report.memory_items} memory items to {masked(dsn)} as project "
        f"{shipper.who.project}; the team store has this machine's entries up to "
        f"{report.cursor}{again}"
    )
    return 0


def ship_deletions(paths: StatePaths) -> str:
    """After `ctxd forget`: one shipping pass, so that the team store forgets too; what
    happened, in one line ("" when no team store is configured)."""
    from summarizer.team.identity import settings
    from summarizer.team.shipper import Shipper

    config = load_config(paths.config)
    team = settings(config)
    if not team.enabled:
        return ""
    try:
        shipper = Shipper(paths, config, team.dsn)
        try:
            report = shipper.ship()
        finally:
            shipper.close()
    except CtxdError as e:
        return (
            f"the team store still holds them: {e}; they leave it at the next shipment "
            "(the daemon's, or `ctxd team ship`)"
        )
    return f"the team store forgot them too ({report.purges} deletions shipped)"


def _status(paths: StatePaths, config: Config, as_json: bool) -> int:
    from summarizer.team.status import team_status

    report = team_status(paths, config, probe=True)
    if as_json:
        print(json.dumps(report, indent=2))
        return 0
    print("\n".join(status_lines(report)))
    return 0


def status_lines(report: dict[str, Any]) -> list[str]:
    """The human-readable lines of a `team_status` report."""
    if not report["configured"]:
        return ["team store:  off (set [team] dsn or CTXD_TEAM_DSN to share this memory)"]
    lines = [
        f"team store:  {report['dsn']}",
        f"project:     {report['project']}",
        f"machine:     {report['machine_id']} ({report['user']}@{report['host']})",
        f"shipped:     {report['rows_shipped']} entries, up to entry {report['entry_cursor']}",
        f"waiting:     {report['waiting_entries']} entries, {report['waiting_deletions']} "
        f"deletions{', memory changes' if report['memory_waiting'] else ''}",
        f"last ship:   {report['last_ship'] or 'never'}",
    ]
    if report["last_error"]:
        lines.append(
            f"last error:  {report['last_error']} (failing since {report['error_since']}, "
            f"{report['failures']} attempts; next at {report['retry_at']})"
        )
    server = report.get("server")
    if server is not None:
        if not server.get("reachable"):
            lines.append(f"server:      unreachable: {server['error']}")
        elif server.get("error"):
            lines.append(f"server:      {server['error']}")
        else:
            lines.append(
                f"server:      schema version {server['schema_version']}; "
                f"{server['machine_entries']} entries of this machine; the project has "
                f"{server['project_machines']} machines of {server['project_users']} users"
            )
    return lines
