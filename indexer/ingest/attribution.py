"""Agent attribution: one identity per agent instance, whether named by AgentId or by Claude Code.

Claude Code names a subagent in three places: the `Agent`/`Task` tool call (PreToolUse, with
the prompt that may carry `AgentId: x`), `SubagentStart`/`SubagentStop` and tool events inside
the subagent (`agent_id`), and the tool's result (`tool_response.agentId`). The canonical id is
the prompt's AgentId, else a deterministic fallback (seed 000 §3.2), else Claude Code's id; every
other name becomes an alias of it. State lives in the index and is written in the ingest
transaction; `reset()` drops the in-memory cache after a rollback.

Attribution is a function of the spool alone: what a session's cache holds is exactly what
`_session` reads back from the index (agents, aliases, and the Agent calls of its entries), and
every choice among agents is made by a persisted order, (started_ns, agent_id), never by the
order things happened to enter the cache. A daemon restarted anywhere in a catch-up, or a
session dropped from the cache and read again, attributes every later event as an
uninterrupted run does.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field

import msgspec

from indexer.models import Entry
from indexer.prepare.agentid import (
    RESERVED_AGENT_IDS,
    disambiguate,
    extract_agent_id,
    fallback_agent_id,
    is_valid_agent_id,
)

AGENT_EVENTS = frozenset({"agent_start", "agent_complete", "agent_launched", "agent_failed"})
# Sessions kept in memory between batches. Their state is in the index (each batch's
# transaction writes it), so a dropped session is reloaded on its next event; unbounded, a
# catch-up over a million events (46,000 sessions) grew the daemon by ~30 MB.
MAX_CACHED_SESSIONS = 256
_STATUS_BY_EVENT = {
    "agent_start": "running",
    "agent_launched": "running",
    "subagent_start": "running",
    "agent_complete": "completed",
    "subagent_stop": "completed",
    "agent_failed": "failed",
}


@dataclass(slots=True)
class AgentRow:
    """One agent instance of one session."""

    agent_id: str
    agent_type: str
    started_ns: int
    last_ns: int
    cc_agent_id: str = ""
    tool_use_id: str = ""
    explicit: bool = False
    completed_ns: int = 0
    status: str = "running"
    description: str = ""


@dataclass(slots=True)
class _Session:
    agents: dict[str, AgentRow] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)  # Claude Code's id -> agent
    by_tool: dict[str, str] = field(default_factory=dict)  # an Agent call's tool_use_id -> agent


# The Agent calls of a session's entries, read when the session is loaded (a partial index of
# entries serves it: indexer.index.store).
_CALLS = (
    "SELECT tool_use_id, agent_id FROM entries WHERE session_id=? AND tool_use_id<>''"
    " AND event IN ('agent_start','agent_complete','agent_launched','agent_failed')"
)


class AgentRegistry:
    """Resolves every entry's agent within the current ingest transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._sessions: dict[str, _Session] = {}
        self._dirty: set[tuple[str, str]] = set()
        self._new_aliases: list[tuple[str, str, str]] = []
        # Whether an id was relinked since the last flush: only then may `current` move an
        # entry of the batch, and the caller skips it for the others.
        self.relinked = False

    def reset(self) -> None:
        """Forget cached state (call after a rolled-back transaction)."""
        self._sessions.clear()
        self._dirty.clear()
        self._new_aliases.clear()
        self.relinked = False

    def shed(self, max_sessions: int = MAX_CACHED_SESSIONS) -> None:
        """Drop the cached sessions once more than `max_sessions` are held; call it between
        transactions (with nothing left to flush), when the index has every session's state."""
        if len(self._sessions) > max_sessions and not self._dirty and not self._new_aliases:
            self._sessions.clear()

    def attribute(self, e: Entry) -> Entry:
        """Return `e` with its canonical `agent_id` (and agent type) filled in."""
        is_call = e.event in AGENT_EVENTS
        if not is_call and not e.cc_agent_id:
            return e  # the orchestrator's own event (most of them): no session state needed
        s = self._session(e.session_id)
        # A call whose tool_use_id is known already and that would start the agent again is a
        # duplicate delivery (dropped at insert); it must not undo a completed agent's status.
        replayed = bool(e.tool_use_id) and e.tool_use_id in s.by_tool
        agent_id = self._agent_call(s, e) if is_call else self._resolve_cc(s, e)
        row = s.agents[agent_id]
        row.last_ns = max(row.last_ns, e.ts_ns)
        status = _STATUS_BY_EVENT.get(e.event)
        if status == "running" and replayed and row.status in ("completed", "failed"):
            status = None
        if status:
            row.status = status
            if status in ("completed", "failed"):
                row.completed_ns = e.ts_ns
        self._dirty.add((e.session_id, agent_id))
        return msgspec.structs.replace(e, agent_id=agent_id, agent_type=row.agent_type)

    def current(self, e: Entry) -> Entry:
        """`e` moved to the agent its Claude Code id is linked to now.

        A later event of the same batch may relink the id (see `_link`); `_link` moves the
        stored entries, and the caller passes the batch's not yet stored ones through here.
        """
        s = self._sessions.get(e.session_id) if e.cc_agent_id else None
        agent_id = s.aliases.get(e.cc_agent_id) if s is not None else None
        if agent_id is None or agent_id == e.agent_id:
            return e
        return msgspec.structs.replace(e, agent_id=agent_id)  # as `_link`'s UPDATE does

    def flush(self) -> None:
        """Write changed agents and new aliases (inside the caller's transaction)."""
        rows = []
        for session_id, agent_id in self._dirty:
            r = self._sessions[session_id].agents[agent_id]
            rows.append(
                (
                    session_id,
                    r.agent_id,
                    r.agent_type,
                    r.cc_agent_id,
                    r.tool_use_id,
                    int(r.explicit),
                    r.started_ns,
                    r.last_ns,
                    r.completed_ns,
                    r.status,
                    r.description,
                )
            )
        self._conn.executemany(
            "INSERT OR REPLACE INTO agents(session_id, agent_id, agent_type, cc_agent_id,"
            " tool_use_id, explicit, started_ns, last_ns, completed_ns, status, description)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            rows,
        )
        self._conn.executemany(
            "INSERT OR REPLACE INTO agent_aliases(session_id, alias, agent_id) VALUES (?,?,?)",
            self._new_aliases,
        )
        self._dirty.clear()
        self._new_aliases.clear()
        self.relinked = False

    # --- internals ------------------------------------------------------------------------

    def _agent_call(self, s: _Session, e: Entry) -> str:
        if e.tool_use_id:
            agent_id = s.by_tool.get(e.tool_use_id)
        else:
            agent_id = self._open_call_without_id(s, e)
        if agent_id is None:
            explicit = extract_agent_id(e.instruction)
            agent_type = e.agent_type or "general-purpose"
            if explicit is not None:
                agent_id = explicit
            else:
                base = fallback_agent_id(e.instruction, agent_type, e.session_id, e.ts_ns)
                agent_id = disambiguate(base, lambda c: c in s.agents or c in s.aliases)
            row = s.agents.get(agent_id)
            if row is None:
                row = AgentRow(agent_id, agent_type, e.ts_ns, e.ts_ns, explicit=bool(explicit))
                s.agents[agent_id] = row
            row.tool_use_id = e.tool_use_id or row.tool_use_id
            row.description = e.description or row.description
            if e.tool_use_id:
                s.by_tool[e.tool_use_id] = agent_id
        if e.cc_agent_id:
            self._link(s, e.session_id, e.cc_agent_id, agent_id)
        return agent_id

    @staticmethod
    def _open_call_without_id(s: _Session, e: Entry) -> str | None:
        """Pair a result with its call when Claude Code sent no tool_use_id (1.0.x versions).

        The oldest running agent started without an id, of the same type and description, is
        the one this result belongs to; a start is never paired (it begins a new instance).
        """
        if e.event == "agent_start":
            return None
        return _oldest(
            row
            for row in s.agents.values()
            if not row.tool_use_id
            and row.status == "running"
            and row.agent_type == (e.agent_type or "general-purpose")
            and row.description == e.description
        )

    def _resolve_cc(self, s: _Session, e: Entry) -> str:
        cc = e.cc_agent_id
        agent_id = s.aliases.get(cc)
        if agent_id is not None:
            return agent_id
        agent_id = s.by_tool.get(cc)  # a 1.0.x subagent is named by its Task call's id
        if agent_id is not None:
            self._link(s, e.session_id, cc, agent_id)
            return agent_id
        # The oldest running agent of the same type that no Claude Code id names yet (FIFO).
        wanted = e.agent_type.lower()
        agent_id = _oldest(
            row
            for row in s.agents.values()
            if not row.cc_agent_id
            and row.status == "running"
            and (not wanted or row.agent_type.lower() == wanted)
        )
        if agent_id is None:
            own = cc.lower()
            if is_valid_agent_id(own) and own not in RESERVED_AGENT_IDS and own not in s.agents:
                agent_id = own
            else:
                base = fallback_agent_id(cc, e.agent_type or "agent", e.session_id, e.ts_ns)
                agent_id = disambiguate(base, lambda c: c in s.agents or c in s.aliases)
            s.agents[agent_id] = AgentRow(agent_id, e.agent_type or "agent", e.ts_ns, e.ts_ns)
        self._link(s, e.session_id, cc, agent_id)
        return agent_id

    def _link(self, s: _Session, session_id: str, cc: str, agent_id: str) -> None:
        previous = s.aliases.get(cc)
        if previous == agent_id:
            return
        s.aliases[cc] = agent_id
        s.agents[agent_id].cc_agent_id = cc
        self._new_aliases.append((session_id, cc, agent_id))
        if previous is not None:
            self.relinked = True
            # A parallel agent of the same type was linked by arrival order and the tool
            # result now names the right one: move what was attributed to the wrong agent.
            moved = self._conn.execute(
                "UPDATE entries SET agent_id=? WHERE session_id=? AND agent_id=? AND cc_agent_id=?",
                (agent_id, session_id, previous, cc),
            ).rowcount
            if moved:  # else only this batch's entries moved (`current`): no view has them yet
                self._conn.executemany(
                    "INSERT OR IGNORE INTO dirty_views(session_id, view) VALUES (?, ?)",
                    [(session_id, previous), (session_id, agent_id)],
                )
            old = s.agents.get(previous)
            if previous == cc.lower() and not self._has_entries(session_id, previous):
                # The agent was only ever Claude Code's id seen before its Agent call: now
                # that the id is linked to the real instance, nothing is left of it.
                s.agents.pop(previous, None)
                self._dirty.discard((session_id, previous))
                self._conn.execute(
                    "DELETE FROM agents WHERE session_id=? AND agent_id=?", (session_id, previous)
                )
                return
            if old is not None and old.cc_agent_id == cc:
                old.cc_agent_id = ""  # free again for a Claude Code id not linked yet
            self._dirty.add((session_id, previous))

    def _has_entries(self, session_id: str, agent_id: str) -> bool:
        row = self._conn.execute(
            "SELECT 1 FROM entries WHERE session_id=? AND agent_id=? LIMIT 1",
            (session_id, agent_id),
        ).fetchone()
        return row is not None

    def _session(self, session_id: str) -> _Session:
        s = self._sessions.get(session_id)
        if s is not None:
            return s
        s = _Session()
        for row in self._conn.execute(
            "SELECT agent_id, agent_type, started_ns, last_ns, cc_agent_id, tool_use_id, explicit,"
            " completed_ns, status, description FROM agents WHERE session_id=?",
            (session_id,),
        ):
            r = AgentRow(
                row[0], row[1], row[2], row[3], row[4], row[5], bool(row[6]), row[7], row[8], row[9]
            )
            s.agents[r.agent_id] = r
        # Every Agent call stored, not only each agent's last (an AgentId used by two calls).
        for tool_use_id, agent_id in self._conn.execute(_CALLS, (session_id,)):
            s.by_tool[tool_use_id] = agent_id
        for alias, agent_id in self._conn.execute(
            "SELECT alias, agent_id FROM agent_aliases WHERE session_id=?", (session_id,)
        ):
            s.aliases[alias] = agent_id
        self._sessions[session_id] = s
        return s


def _oldest(rows: Iterable[AgentRow]) -> str | None:
    """The agent id of the earliest started of `rows` (ties by id), if any."""
    best = min(rows, key=lambda r: (r.started_ns, r.agent_id), default=None)
    return None if best is None else best.agent_id
