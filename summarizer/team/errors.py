"""The team store's exception tree; each message says what happened and how to recover.

CtxdError (indexer.errors)
└── TeamError                   any team-store failure
    ├── TeamNotConfiguredError  no `[team] dsn` and no CTXD_TEAM_DSN
    ├── TeamDriverMissingError  psycopg is not installed (says how to install it)
    ├── TeamUnavailableError    the server cannot be reached, or the connection broke
    ├── TeamSchemaError         the tables are missing or older (`ctxd team init`), or newer
    └── TeamPermissionError     the database role may not do what was asked
"""

from __future__ import annotations

from indexer import CtxdError


class TeamError(CtxdError):
    """Base of the team store's errors."""


class TeamNotConfiguredError(TeamError):
    """No database is configured for the team store."""


class TeamDriverMissingError(TeamError):
    """The PostgreSQL driver (psycopg) is not installed."""


class TeamUnavailableError(TeamError):
    """The database cannot be reached now; retrying later may succeed."""


class TeamSchemaError(TeamError):
    """The database's team tables are missing or of another version."""


class TeamPermissionError(TeamError):
    """The database role lacks a privilege, or row-level security refused a row."""
