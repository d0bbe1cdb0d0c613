"""This machine's view of its shipping, kept in `team/state.json` for status and doctor.

The cursors in it follow the database's: they are written only after PostgreSQL committed
(the database's own cursor row is the truth; this copy lets `ctxd status` answer without a
connection). The last error and the retry time are what a user needs when shipping stalls.
"""

from __future__ import annotations

import logging
import time

import msgspec

from indexer import StateDirError, StatePaths, safefs, write_atomic
from summarizer.team.identity import TEAM_DIR

__all__ = ["STATE_FILE", "ShipState", "read_state", "record_failure", "record_success"]

STATE_FILE = "state.json"
log = logging.getLogger("ctxd.team")


class ShipState(msgspec.Struct, forbid_unknown_fields=False):
    """The last cursors the database confirmed, and the last error if shipping stalls."""

    index_id: str = ""
    entry_cursor: int = 0  # every entry up to this id is in the team store
    purge_seq: int = 0  # every deletion up to this sequence number reached it
    memory_mark: int = 0  # the memory's watermark when its items were last shipped
    rows_shipped: int = 0  # entries this machine has shipped, as the database counts them
    last_ship_ns: int = 0  # when a pass last succeeded
    last_error: str = ""  # "" while shipping works
    error_since_ns: int = 0
    failures: int = 0  # failed attempts in a row
    retry_at_ns: int = 0


_decoder = msgspec.json.Decoder(ShipState)


def read_state(paths: StatePaths) -> ShipState | None:
    """The state file, or None when this machine never shipped (or the file is unreadable)."""
    if not (paths.root / TEAM_DIR / STATE_FILE).is_file():  # reading creates no folder
        return None
    try:
        return _decoder.decode(safefs.read_bytes(paths.root, paths.root / TEAM_DIR / STATE_FILE))
    except (OSError, StateDirError, msgspec.DecodeError, ValueError):
        return None


def _write(paths: StatePaths, state: ShipState) -> None:
    try:
        data = msgspec.json.encode(state)
        write_atomic(paths.root / TEAM_DIR / STATE_FILE, data, root=paths.root)
    except Exception:  # a full disk must not stop shipping: the database holds the truth
        log.exception("cannot write %s", paths.root / TEAM_DIR / STATE_FILE)


def record_success(
    paths: StatePaths,
    *,
    index_id: str,
    entry_cursor: int,
    purge_seq: int,
    memory_mark: int,
    rows_shipped: int,
) -> ShipState:
    """A committed pass: the database's cursors, and no error."""
    state = ShipState(
        index_id=index_id,
        entry_cursor=entry_cursor,
        purge_seq=purge_seq,
        memory_mark=memory_mark,
        rows_shipped=rows_shipped,
        last_ship_ns=time.time_ns(),
    )
    _write(paths, state)
    return state


def record_failure(paths: StatePaths, error: str, retry_in_s: float) -> ShipState:
    """A failed attempt: the error, since when shipping fails, and when it is retried."""
    old = read_state(paths) or ShipState()
    now = time.time_ns()
    state = msgspec.structs.replace(
        old,
        last_error=error,
        error_since_ns=old.error_since_ns if old.last_error else now,
        failures=old.failures + 1,
        retry_at_ns=now + int(retry_in_s * 1e9),
    )
    _write(paths, state)
    return state
