"""`ctxd doctor`'s team checks: driver, server, schema, and whether shipping keeps up."""

from __future__ import annotations

from indexer import Config, StatePaths
from summarizer.team.errors import TeamDriverMissingError
from summarizer.team.identity import settings
from summarizer.team.pg import INSTALL_HINT, driver

__all__ = ["team_checks"]

# (status OK|WARN|FAIL, name, what was found, how to fix it)
Found = tuple[str, str, str, str]
_NAME = "team store"


def team_checks(paths: StatePaths, config: Config, *, daemon_running: bool) -> list[Found]:
    """The team store's checks; none when no team database is configured."""
    if not settings(config).enabled:
        return []
    try:
        driver()
    except TeamDriverMissingError:
        return [("FAIL", _NAME, "[team] dsn is set but psycopg is not installed", INSTALL_HINT)]
    from summarizer.team.status import team_status

    report = team_status(paths, config, probe=True)
    server = report["server"]
    waiting = report["waiting_entries"]
    where = f"{report['dsn']} (project {report['project']})"
    if not server.get("reachable"):
        return [
            (
                "WARN",
                _NAME,
                f"{where} is unreachable: {server['error']}; indexing goes on locally, "
                f"{waiting} entries wait to be shipped",
                "check that the server runs and the DSN, network and TLS settings are right "
                "(`ctxd team status`); shipping resumes by itself",
            )
        ]
    if server.get("error"):
        return [("FAIL", _NAME, f"{where}: {server['error']}", "run `ctxd team init`")]
    if report["last_error"]:
        return [
            (
                "WARN",
                _NAME,
                f"shipping to {where} fails since {report['error_since']}: "
                f"{report['last_error']}; {waiting} entries waiting",
                "see `ctxd team status` and ctxd.log; it is retried by itself",
            )
        ]
    if waiting and not daemon_running:
        return [
            (
                "WARN",
                _NAME,
                f"{waiting} entries wait to be shipped to {where} and no daemon runs",
                "`ctxd start` (the daemon ships as it indexes) or `ctxd team ship`",
            )
        ]
    return [
        (
            "OK",
            _NAME,
            f"{where}: schema version {server['schema_version']}, this machine's entries "
            f"shipped up to {report['entry_cursor']}, {waiting} waiting",
            "",
        )
    ]
