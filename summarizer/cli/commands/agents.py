"""`ctxd agents SESSION`: a session's agents with type, status, first instruction and counts."""

from __future__ import annotations

import argparse
import json
import time

from indexer import CtxdError, agent_listing, open_readonly
from summarizer.cli.terminal.colour import paint
from summarizer.common.cliargs import state_paths
from summarizer.daemon.session_jobs import catch_up_sessions
from summarizer.resume.sessions import resolve_session

__all__ = ["cmd_agents"]

_INSTRUCTION_CHARS = 70


def _iso(ts_ns: int) -> str | None:
    if not ts_ns:
        return None
    seconds, rem = divmod(ts_ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rem // 1_000_000:03d}Z"


def cmd_agents(args: argparse.Namespace) -> int:
    """List the agents of one session, oldest first."""
    paths = state_paths(args)
    catch_up_sessions(paths)
    conn = open_readonly(paths.index_db)
    if conn is None:
        raise CtxdError(f"no sessions recorded yet in {paths.root}")
    try:
        info = resolve_session(conn, args.session)
        agents = agent_listing(conn, info.session_id)
    finally:
        conn.close()
    for a in agents:
        a["started"], a["last_activity"] = _iso(a.pop("started_ns")), _iso(a.pop("last_ns"))
    if args.json:
        print(json.dumps(agents, indent=2, ensure_ascii=False))
        return 0
    if not agents:
        print(f"session {info.session_id} has no subagents")
        return 0
    print(paint(f"{len(agents)} agents of session {info.session_id}", "bold"))
    for a in agents:
        status = a["status"]
        colour = "red" if a["failures"] else "green" if status == "completed" else "yellow"
        instruction = " ".join(str(a["instruction"]).split())
        if len(instruction) > _INSTRUCTION_CHARS:
            instruction = instruction[: _INSTRUCTION_CHARS - 1] + "…"
        print(
            f"{a['agent_id']}  {a['agent_type'] or '-'}  {paint(status, colour)}  "
            f"{a['entries']} events, {a['tool_calls']} tool calls, {a['failures']} failures"
        )
        if instruction:
            print(f"    {instruction}")
    return 0
