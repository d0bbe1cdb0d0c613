"""A scripted stand-in for the OpenAI Responses API on loopback, for the real Codex CLI.

Codex (a `model_providers` entry with `base_url = "http://127.0.0.1:<port>/v1"` and
`wire_api = "responses"`) sends `POST /v1/responses` and reads the answer as server-sent
events (`response.created`, `response.output_item.done` per item, `response.completed` with
the usage). The conversation is scripted as for Claude Code (tests/claude_standin.py): a user
message holding `[[plan:NAME]]` starts plan NAME; the output of call `call_NAME_<i>` means
turn i is done, so turn i+1 comes next. Codex's compaction request (its last user message
asks for a "CONTEXT CHECKPOINT COMPACTION") gets `summary`; anything else a short text. Every
request body is kept, in order.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from claude_standin import Plan

__all__ = [
    "COMPACT_ASK", "CodexStandin", "exec_call", "patch", "reply", "serve", "spawn", "wait_agent",
]  # fmt: skip

Item = dict[str, Any]  # one output item of an answer (a call, or a message)
COMPACT_ASK = "CONTEXT CHECKPOINT COMPACTION"
_PLAN = re.compile(r"\[\[plan:([a-z0-9]+)\]\]")
_CALL = re.compile(r"^call_([a-z0-9]+)_(\d+)$")
_AGENT = "<spawned agent>"


def exec_call(cmd: str) -> Item:
    """The shell tool of Codex 0.171 (`exec_command`), as a function call."""
    return {"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": cmd})}


def patch(text: str) -> Item:
    """An `apply_patch` call (a custom tool: its input is the patch itself)."""
    return {"type": "custom_tool_call", "name": "apply_patch", "input": text}


def spawn(message: str) -> Item:
    """A subagent started with `spawn_agent` (in the multi_agent_v1 namespace)."""
    return {"type": "function_call", "name": "spawn_agent", "namespace": "multi_agent_v1",
            "arguments": json.dumps({"message": message})}  # fmt: skip


def wait_agent() -> Item:
    """A `wait_agent` call for the subagent the last `spawn_agent` started (its id is filled
    in from that call's output)."""
    return {"type": "function_call", "name": "wait_agent", "namespace": "multi_agent_v1",
            "arguments": json.dumps({"targets": [_AGENT], "timeout_ms": 60000})}  # fmt: skip


def reply(text: str) -> Item:
    """An assistant message, which ends the turn."""
    return {"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": text}]}  # fmt: skip


@dataclass
class CodexStandin:
    """The server's script and what it received."""

    plans: dict[str, Plan]
    summary: str = "The user asked for the CSV export fix; work continues."
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, body: dict[str, Any]) -> tuple[list[Item], int]:
        """(output items, input_tokens) for one request."""
        with self.lock:
            self.requests.append(body)
            n = len(self.requests)
        items = body.get("input", [])
        last_user = _last_user_text(items)
        if COMPACT_ASK in last_user:
            return [_with_id(reply(self.summary), f"msg_{n}")], 2000
        step = _next_step(items, last_user, self.plans)
        if step is None:
            return [_with_id(reply("OK."), f"msg_{n}")], 1000
        name, index = step
        out = []
        for k, item in enumerate(self.plans[name].turns[index]):
            if item["type"] == "message":
                out.append(_with_id(item, f"msg_{name}_{index}_{k}"))
            else:
                call = {**item, "call_id": f"call_{name}_{index}" + (f"x{k}" if k else "")}
                if _AGENT in call.get("arguments", ""):
                    call["arguments"] = call["arguments"].replace(_AGENT, _spawned(items))
                out.append(call)
        return out, self.plans[name].usage.get(index, 3000)

    def is_compaction(self, body: dict[str, Any]) -> bool:
        return COMPACT_ASK in _last_user_text(body.get("input", []))


def _spawned(items: list[Item]) -> str:
    """The id of the agent the conversation's last spawn_agent call started."""
    for item in reversed(items):
        if item.get("type") == "function_call_output" and '"agent_id"' in str(item.get("output")):
            try:
                return str(json.loads(str(item["output"]))["agent_id"])
            except (ValueError, KeyError):
                continue
    return ""


def _with_id(item: Item, item_id: str) -> Item:
    return {**item, "id": item_id}


def _text(item: Item) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return " ".join(c.get("text", "") for c in content or [] if isinstance(c, dict))


def _last_user_text(items: list[Item]) -> str:
    users = [i for i in items if i.get("type") == "message" and i.get("role") == "user"]
    users = [i for i in users if not _text(i).startswith("<")] or users
    return _text(users[-1]) if users else ""


def _next_step(items: list[Item], last_user: str, plans: dict[str, Plan]) -> tuple[str, int] | None:
    """The turn after the last call's output; else the first turn of the plan the last user
    message names (after a compaction that message is Codex's summary: no plan restarts)."""
    for item in reversed(items):
        # A user message Codex adds itself (`<subagent_notification>…`) is no new request.
        if item.get("type") == "message" and item.get("role") == "user":
            if not _text(item).startswith("<"):
                break
            continue
        if str(item.get("type", "")).endswith("_output"):
            m = _CALL.match(str(item.get("call_id", "")).split("x")[0])
            if m and m[1] in plans:
                index = int(m[2]) + 1
                return (m[1], index) if index < len(plans[m[1]].turns) else None
    m = _PLAN.search(last_user)
    return (m[1], 0) if m and m[1] in plans else None


def serve(standin: CodexStandin) -> tuple[ThreadingHTTPServer, int]:
    """Start the server on 127.0.0.1 in a daemon thread; returns (server, port)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def do_GET(self) -> None:  # model lists and the like: none here
            self.send_response(404)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.endswith("/responses"):
                self.do_GET()
                return
            items, input_tokens = standin.answer(body)
            rid = f"resp_{len(standin.requests)}"
            events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": rid}}]
            events += [{"type": "response.output_item.done", "item": i} for i in items]
            usage = {"input_tokens": input_tokens, "input_tokens_details": None,
                     "output_tokens": 20, "output_tokens_details": None,
                     "total_tokens": input_tokens + 20}  # fmt: skip
            events.append({"type": "response.completed", "response": {"id": rid, "usage": usage}})
            data = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
            raw = data.encode()
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]
