"""The PostgreSQL driver, loaded lazily: connections, and its errors as the team store's own."""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from indexer import redact_text
from summarizer.team.errors import (
    TeamDriverMissingError,
    TeamError,
    TeamPermissionError,
    TeamSchemaError,
    TeamUnavailableError,
)

if TYPE_CHECKING:
    import psycopg

__all__ = ["connect", "driver", "masked", "translate_errors"]

INSTALL_HINT = (
    "team memory needs the PostgreSQL driver psycopg: pip install 'ctxd-claude[team]' "
    "(with pipx: pipx inject ctxd-claude 'psycopg[binary]')"
)
# Server-side limits of every statement and of an idle transaction: a stuck lock or a
# half-open connection must end in an error the caller retries, never in a hang.
STATEMENT_TIMEOUT_MS = 60_000
_PASSWORD_IN_URI = re.compile(r"(://[^:/@\s]*:)[^@\s]*@")
_PASSWORD_KEYWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.I)


def driver() -> Any:
    """The psycopg module; TeamDriverMissingError says how to install it."""
    try:
        import psycopg
    except ImportError as e:
        raise TeamDriverMissingError(INSTALL_HINT) from e
    return psycopg


def connect(dsn: str, timeout_s: float, *, autocommit: bool = False) -> Any:
    """A connection to the team database (libpq: `sslmode` and the rest come from `dsn`)."""
    pg = driver()
    with translate_errors("connecting to the team database"):
        conn: psycopg.Connection[Any] = pg.connect(
            dsn,
            connect_timeout=max(1, math.ceil(timeout_s)),
            application_name="ctxd",
            autocommit=autocommit,
            # Notices ("word is too long to be indexed") would flood the log.
            options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS}"
            f" -c idle_in_transaction_session_timeout={STATEMENT_TIMEOUT_MS}"
            " -c client_min_messages=warning",
        )
    return conn


def masked(dsn: str) -> str:
    """`dsn` with its password replaced by `***` (for status lines and logs)."""
    return _PASSWORD_KEYWORD.sub(r"\1***", _PASSWORD_IN_URI.sub(r"\1***@", dsn))


@contextlib.contextmanager
def translate_errors(doing: str) -> Iterator[None]:
    """psycopg's exceptions as TeamError subclasses, with a redacted one-line message."""
    pg = driver()
    try:
        yield
    except TeamError:
        raise
    except pg.Error as e:
        raise _translated(pg, e, doing) from e


def _translated(pg: Any, e: Exception, doing: str) -> TeamError:
    text = " ".join(str(e).split())
    text = redact_text(masked(text))[:500] or type(e).__name__
    errors = pg.errors
    if isinstance(e, errors.InsufficientPrivilege):
        return TeamPermissionError(
            f"{doing}: {text}; the database role lacks this privilege (see `ctxd team init "
            "--roles`)"
        )
    if isinstance(e, errors.UndefinedTable | errors.InvalidSchemaName | errors.UndefinedColumn):
        return TeamSchemaError(f"{doing}: {text}; run `ctxd team init` to create the tables")
    if isinstance(e, pg.OperationalError | pg.InterfaceError):
        return TeamUnavailableError(f"{doing}: {text}")
    return TeamError(f"{doing}: {text}")
