"""`ctxd read`'s target: the session and agent a user names, by any id they were shown."""

# Users see an agent under three names: the prompt's `AgentId:`, Claude Code's `agent_id`
# (hook payloads, transcripts) and the generated `<type>-<stamp>-<hash>`; and a session under
# its id, the 8-character prefix `ctxd sessions` prints, or its start stamp. All resolve here
# with plain sqlite3 queries; the prefix/stamp matcher (msgspec) is imported only when needed.

from __future__ import annotations

import re
import sqlite3

from indexer import query

__all__ = ["resolve_read_target"]

# A whole Claude Code session id: unknown ones are a fresh start (empty), not a typo.
_FULL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def resolve_read_target(
    conn: sqlite3.Connection, agent_ref: str, session_ref: str | None
) -> tuple[str | None, str]:
    """(session id or None, canonical agent id) for the names given on the command line.

    Raises summarizer.resume.sessions' SessionNotFoundError / AmbiguousSessionError for a session
    prefix or stamp that names no session or several.
    """
    if session_ref is None:
        session_id = query.latest_session_with_agent(conn, agent_ref)
        if session_id is not None or agent_ref == "main":
            return session_id, agent_ref
        found = query.latest_agent_by_alias(conn, agent_ref)
        return found if found else (None, agent_ref)
    session_id = _session(conn, session_ref)
    if agent_ref == "main" or _has_agent(conn, session_id, agent_ref):
        return session_id, agent_ref
    return session_id, query.alias_in_session(conn, session_id, agent_ref) or agent_ref


def _session(conn: sqlite3.Connection, ref: str) -> str:
    if query.session_exists(conn, ref) or _FULL_UUID.fullmatch(ref.lower()):
        return ref
    from summarizer.resume.sessions import resolve_session

    return resolve_session(conn, ref).session_id


def _has_agent(conn: sqlite3.Connection, session_id: str, agent_id: str) -> bool:
    return query.has_agent(conn, session_id, agent_id)
