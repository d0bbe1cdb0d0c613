"""A corpus-shaped spool whose subagents make attribution guess: parallel agents, late links.

Claude Code 2.x hook sequences as the corpus shows them (tests/e2e/test_crash.py writes
simpler ones): sessions interleaved, each with prompts and tool calls of the orchestrator, and
waves of one to three subagents started together. In a wave, agents of one type are started by
`Agent` calls (`AgentId: …` in some prompts, none in others; an id used again in a later wave),
their `SubagentStart` events come in any order (the arrival-order guess then links Claude Code's
ids to the wrong agents until the tool results name them), their tool events interleave, some
arrive before their agent's `SubagentStart`, some agents are interrupted (`PostToolUseFailure`,
no agent id) before they ran or while they ran, some run in the background (`async_launched`),
and some subagents have no `Agent` call the hooks saw. Hooks race: a few lines carry a time slightly before the line above.
Sessions come and go, so that more of them are seen than the writer keeps cached.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from ctxd_hook.hook import build_line, segment_name

BASE_TS_NS = 1_767_261_600_000_000_000  # 2026-01-01T10:00:00Z: sealed hours
TYPES = ("Explore", "general-purpose", "code-reviewer")
WORDS = [
    "auth",
    "login",
    "token",
    "session",
    "refactor",
    "component",
    "render",
    "state",
    "hook",
    "test",
    "fixture",
    "schema",
    "migration",
    "index",
    "query",
    "cache",
    "retry",
    "timeout",
    "deploy",
    "build",
    "lint",
    "format",
    "config",
    "route",
]


@dataclass
class _Agent:
    tool_use_id: str
    cc: str
    agent_type: str
    prompt: str
    started: bool = False  # SubagentStart sent
    events: int = 0  # tool calls still to make
    ended: bool = False


@dataclass
class _Session:
    sid: str
    agents: list[_Agent] = field(default_factory=list)
    waves: int = 0
    events_left: int = 0


@dataclass
class AgentSpool:
    """Spool lines (segment name, line) in the order written."""

    lines: list[tuple[str, bytes]] = field(default_factory=list)


def generate(n: int, seed: int, concurrent: int = 12, session_events: int = 240) -> AgentSpool:
    """`n` events; about `concurrent` sessions live at a time, each for ~`session_events`."""
    rng = random.Random(seed)
    out = AgentSpool()
    step_ns = 3 * 3600 * 10**9 // n  # spread over three hour segments
    serial = [0]

    def new_id(prefix: str) -> str:
        serial[0] += 1
        return f"{prefix}{serial[0]:07d}"

    def text(lo: int, hi: int) -> str:
        words, size, want = [], 0, rng.randrange(lo, hi)
        while size < want:
            w = rng.choice(WORDS)
            words.append(w)
            size += len(w) + 1
        return " ".join(words)

    def emit(p: dict[str, Any]) -> None:
        i = len(out.lines)
        ts = BASE_TS_NS + i * step_ns + rng.randrange(step_ns // 2)
        if i and rng.random() < 0.03:  # a hook that lost the race for the spool's lock
            ts -= step_ns + rng.randrange(step_ns)
        data = json.dumps(p, separators=(",", ":")).encode()
        out.lines.append((segment_name(ts), build_line(data, ts, rng.randrange(1000, 60000))))

    def new_session() -> _Session:
        sid = f"{rng.getrandbits(32):08x}-1b2d-4c3e-9f40-{rng.getrandbits(48):012x}"
        s = _Session(sid, events_left=rng.randrange(session_events // 2, session_events * 2))
        emit({**common(s), "hook_event_name": "SessionStart", "source": "startup"})
        return s

    def common(s: _Session) -> dict[str, Any]:
        return {
            "session_id": s.sid,
            "transcript_path": f"/home/dev/.claude/projects/-home-dev-app/{s.sid}.jsonl",
            "cwd": "/home/dev/app",
            "permission_mode": "default",
        }

    def tool_pair(s: _Session, inside: dict[str, Any]) -> None:
        tuid = new_id("toolu_")
        path = f"/home/dev/app/src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
        tool = rng.choice(["Read", "Edit", "Bash", "Grep"])
        tool_input = {
            "Read": {"file_path": path},
            "Edit": {"file_path": path, "old_string": text(40, 120), "new_string": text(40, 160)},
            "Bash": {"command": f"pytest -q tests/test_{rng.choice(WORDS)}.py"},
            "Grep": {"pattern": rng.choice(WORDS), "path": "/home/dev/app"},
        }[tool]
        base = {**common(s), **inside, "tool_name": tool, "tool_use_id": tuid}
        emit({**base, "hook_event_name": "PreToolUse", "tool_input": tool_input})
        response = {"stdout": text(100, 2000), "stderr": ""} if tool == "Bash" else {}
        emit(
            {**base, "hook_event_name": "PostToolUse", "tool_input": tool_input}
            | {"tool_response": response or {"filePath": path, "content": text(100, 2000)}}
        )

    def start_wave(s: _Session) -> None:
        s.waves += 1
        agent_type = rng.choice(TYPES)
        for k in range(rng.choice((1, 2, 2, 3))):
            if rng.random() < 0.15 and s.waves > 1:
                name = "AgentId: reviewer\n"  # the same named agent, run again
            elif rng.random() < 0.5:
                name = f"AgentId: w{s.waves}-{k}\n"
            else:
                name = ""  # a generated id
            a = _Agent(new_id("toolu_"), f"a{rng.getrandbits(60):015x}", agent_type, "")
            a.prompt = name + text(80, 900)
            a.events = rng.randrange(2, 12)
            s.agents.append(a)
            if rng.random() < 0.08:
                continue  # the hooks never saw this Agent call
            call = {
                **common(s),
                "tool_name": "Agent",
                "tool_use_id": a.tool_use_id,
                "tool_input": {
                    "description": text(10, 40),
                    "prompt": a.prompt,
                    "subagent_type": agent_type,
                },
            }
            emit({**call, "hook_event_name": "PreToolUse"})
            if rng.random() < 0.1:  # refused or interrupted before the subagent ran
                emit({**call, "hook_event_name": "PostToolUseFailure", "error": "interrupted"})
                a.ended = True

    def agent_step(s: _Session) -> None:
        a = rng.choice([a for a in s.agents if not a.ended])
        inside = {"agent_id": a.cc, "agent_type": a.agent_type}
        if not a.started and (rng.random() < 0.85 or a.events == 0):
            a.started = True
            emit({**common(s), **inside, "hook_event_name": "SubagentStart"})
            return
        if a.events:
            a.events -= 1
            tool_pair(s, inside)
            return
        a.ended = True
        call = {
            **common(s),
            "tool_name": "Agent",
            "tool_use_id": a.tool_use_id,
            "tool_input": {"prompt": a.prompt, "subagent_type": a.agent_type},
        }
        roll = rng.random()
        if roll < 0.1:  # interrupted: no agent id in the failure, its stop may come after
            emit({**call, "hook_event_name": "PostToolUseFailure", "error": "interrupted"})
            emit({**common(s), **inside, "hook_event_name": "SubagentStop"} | _stop(text))
            return
        emit({**common(s), **inside, "hook_event_name": "SubagentStop"} | _stop(text))
        status = "async_launched" if roll < 0.2 else "completed"
        result = {
            "status": status,
            "agentId": a.cc,
            "content": [{"type": "text", "text": text(50, 600)}],
        }
        emit({**call, "hook_event_name": "PostToolUse", "tool_response": result})

    live: list[_Session] = []
    while len(out.lines) < n:
        while len(live) < concurrent:
            live.append(new_session())
        s = rng.choice(live)
        running = [a for a in s.agents if not a.ended]
        roll = rng.random()
        if running and roll < 0.7:
            agent_step(s)
        elif not running and roll < 0.08:
            start_wave(s)
        elif roll < 0.8:
            emit({**common(s), "hook_event_name": "UserPromptSubmit", "prompt": text(30, 600)})
        else:
            tool_pair(s, {})
        s.events_left -= 1
        if s.events_left <= 0 and not running:
            emit({**common(s), "hook_event_name": "SessionEnd", "reason": "other"})
            live.remove(s)
    del out.lines[n:]
    return out


def _stop(text: Any) -> dict[str, Any]:
    return {"last_assistant_message": text(50, 400)}
