"""A session's prebuilt notes on disk: whether they cover its events, and taking them once."""

# Standard library only, like the SessionStart hook that reads them (summarizer.resume.hook).

from __future__ import annotations

import os

from indexer import StateDirError, safefs
from summarizer.common.nofollow import is_plain_dir, read_nofollow
from summarizer.resume.fastjson import loads
from summarizer.resume.files import (
    CONSUMED_FILE,
    CONTEXT_FILE,
    STATE_FILE,
    lock_folder,
    state_root_of,
)

# typing costs ~5 ms to import; this constant is the idiom type checkers understand.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["claim_context", "take_context"]


def claim_context(
    folder: str, *, newer_than_ns: int = 0, must_be_session_end: bool = False
) -> str | None:
    """Consume a prebuilt context once: None if none is usable (build one), "" if it is not
    to be injected (low confidence, or consumed already).

    A state that does not cover the session's events up to `newer_than_ns` (seen in the spool,
    not yet indexed) is stale: None. The rename of context.md is the claim: of concurrent
    hooks exactly one succeeds; the consumed context stays on disk for `ctxd resume`.
    """
    state = _state_of(folder, newer_than_ns)
    if not isinstance(state, dict):
        return state
    if state.get("confidence") not in ("high", "medium"):
        return ""
    if must_be_session_end and state.get("trigger") != "session_end":
        return ""
    consumed = os.path.join(folder, CONSUMED_FILE)
    try:
        lock = lock_folder(folder)
    except OSError:
        return ""
    try:
        safefs.rename(state_root_of(folder), os.path.join(folder, CONTEXT_FILE), consumed)
    except (OSError, StateDirError):
        return ""  # consumed already (or never written): inject nothing
    finally:
        os.close(lock)
    try:
        return read_nofollow(consumed).decode("utf-8")
    except (OSError, ValueError):
        return ""


def take_context(
    folder: str, *, newer_than_ns: int = 0, must_be_session_end: bool = False, consume: bool = True
) -> str | None:
    """The prebuilt context of a resume folder, or None if missing or stale (build one).

    Unlike `claim_context`, confidence does not gate it and a context handed back already is
    handed back again: whether to inject is `summarizer.resume.handback.decide`'s call, not the
    file's. With `consume`, context.md is renamed to consumed-context.md (under the folder
    lock) so a writer does not re-arm a context built from the same events.
    """
    state = _state_of(folder, newer_than_ns)
    if not isinstance(state, dict):
        return state
    if must_be_session_end and state.get("trigger") != "session_end":
        return None
    fresh = os.path.join(folder, CONTEXT_FILE)
    consumed = os.path.join(folder, CONSUMED_FILE)
    try:
        lock = lock_folder(folder)
    except OSError:
        return None
    try:
        if consume:
            try:
                safefs.rename(state_root_of(folder), fresh, consumed)
            except (OSError, StateDirError):
                pass  # handed back before: the consumed copy is the same text
        path = consumed if consume or not os.path.exists(fresh) else fresh
        try:
            return read_nofollow(path).decode("utf-8")
        except (OSError, ValueError):
            return None
    finally:
        os.close(lock)


def _state_of(folder: str, newer_than_ns: int) -> dict[str, Any] | str | None:
    """The folder's state if it covers the session's events up to `newer_than_ns`; None if
    it is missing, corrupt or stale (build one); "" if the folder is a symlink (inject nothing).
    """
    if is_plain_dir(folder) is False or is_plain_dir(os.path.dirname(folder)) is False:
        return ""  # a symlink (or no directory) in the state dir: never read through it
    try:
        state = loads(read_nofollow(os.path.join(folder, STATE_FILE)))
    except (OSError, ValueError):
        return None  # missing or corrupt: the build path writes a fresh one
    if not isinstance(state, dict):
        return None
    covers = state.get("covers_ns")
    if newer_than_ns and (not isinstance(covers, int) or covers < newer_than_ns):
        return None
    return state
