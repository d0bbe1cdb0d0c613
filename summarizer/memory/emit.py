"""Explicit events: `ctxd emit decision|failure|constraint|feature-start|feature-complete`.

An explicit event is a hook payload with `hook_event_name` "CtxdEmit" and the record under
`ctxd_record`; it goes through the same spool and index as Claude Code's events, so an
orchestrator can record what it knows without Claude Code.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

from indexer import CtxdError, StatePaths, append_event, is_valid_session_id, resolve_state_paths

KINDS = ("decision", "failure", "constraint", "feature_start", "feature_complete", "note")
# Outside Claude Code, explicit events go to a stream of their own, named so that nobody takes
# it for a conversation (and `ctxd read --agent-id main` never picks it over a real session).
DEFAULT_SESSION = "ctxd-project-notes"
SESSION_ENV = "CTXD_SESSION_ID"
CLAUDE_SESSION_ENV = "CLAUDE_CODE_SESSION_ID"  # set by Claude Code for its Bash tool
_REQUIRED = {
    "decision": "decision",
    "failure": "description",
    "feature_start": "id",
    "feature_complete": "id",
}
_LAST_NS = [0]
_LOCK = threading.Lock()


class EmitError(CtxdError):
    """An explicit event is missing a field or names an invalid session."""


def build_record(kind: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The `ctxd_record` of an explicit event, validated; None and "" fields are left out."""
    kind = kind.replace("-", "_")
    if kind not in KINDS:
        raise EmitError(f"unknown event kind {kind!r}; use one of {', '.join(KINDS)}")
    record: dict[str, Any] = {"kind": kind}
    record.update({k: v for k, v in fields.items() if v is not None and v != ""})
    required = _REQUIRED.get(kind)
    if required and not str(record.get(required, "")).strip():
        raise EmitError(f"{kind} needs a non-empty {required!r}")
    if kind == "constraint" and not (record.get("description") or record.get("revoke")):
        raise EmitError("constraint needs a description or --revoke ID")
    now_ms = int(time.time() * 1000)
    if kind == "feature_start":
        record.setdefault("status", "in_progress")
        record.setdefault("startedAt", now_ms)
    elif kind == "feature_complete":
        record.setdefault("status", "completed")
        record.setdefault("completedAt", now_ms)
    return record


def default_session(paths: StatePaths) -> str:
    """$CTXD_SESSION_ID; inside Claude Code its current session ($CLAUDE_CODE_SESSION_ID, else
    the newest session of this project that has not ended); else the project-notes stream."""
    session = os.environ.get(SESSION_ENV, "") or os.environ.get(CLAUDE_SESSION_ENV, "")
    if session:
        return session
    if os.environ.get("CLAUDECODE") == "1":
        from indexer import newest_active_session, open_readonly

        conn = open_readonly(paths.index_db)
        if conn is not None:
            try:
                found = newest_active_session(conn, (DEFAULT_SESSION, "ctxd-orchestrator"))
            finally:
                conn.close()
            if found:
                return found
    return DEFAULT_SESSION


def emit(
    kind: str,
    *,
    paths: StatePaths | None = None,
    session_id: str | None = None,
    cwd: str | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """Append one explicit event to the spool; return the record written.

    The session is `session_id`, else `default_session` (see there). Field names follow the
    memory files (`featureId`, `name`, `category`, `status`, `startedAt`, `completedAt`, …).
    """
    record = build_record(kind, fields)
    target = paths if paths is not None else resolve_state_paths()
    session = session_id or default_session(target)
    if not is_valid_session_id(session):
        raise EmitError(f"invalid session id {session[:80]!r} (letters, digits, '.', '_', '-')")
    directory = cwd or os.getcwd()
    payload = {
        "session_id": session,
        "hook_event_name": "CtxdEmit",
        "cwd": directory,
        "ctxd_record": record,
    }
    data = json.dumps(payload, ensure_ascii=True).encode()
    with _LOCK:
        # The index dedupes on (ts_ns, pid): two emits of one process must not share a
        # nanosecond, so wait for the clock to pass the previous emit's time.
        while time.time_ns() <= _LAST_NS[0]:
            time.sleep(0)
        written = append_event(data, str(target.root))
        _LAST_NS[0] = time.time_ns()
    if not written:
        raise EmitError("nothing was written to the spool")
    return record
