"""A scripted stand-in for the Anthropic Messages API on loopback, for the real Claude Code CLI.

Claude Code (`ANTHROPIC_BASE_URL=http://127.0.0.1:<port>`) sends `POST /v1/messages`
(streaming or not) and `POST /v1/messages/count_tokens`. The conversation is scripted by
plans: a user message containing `[[plan:NAME]]` starts plan NAME, whose turns are answered
one by one; a `tool_result` for `toolu_NAME_<i>` means turn i is done, so turn i+1 comes next.
The compaction request ("a detailed summary of the conversation") gets an
`<analysis>…</analysis><summary>…</summary>` answer. Anything else gets a short text. Every
request body is kept, in order, for the test's assertions.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Turn = list[dict[str, Any]]  # the content blocks of one assistant answer
_PLAN = re.compile(r"\[\[plan:([a-z0-9_]+)\]\]")
_RESULT = re.compile(r"^toolu_([a-z0-9_]+)_(\d+)$")
COMPACT_ASK = "detailed summary of the conversation"


def tool(name: str, **tool_input: Any) -> dict[str, Any]:
    """A tool_use block (its id is filled in from the plan and turn)."""
    return {"type": "tool_use", "name": name, "input": tool_input}


def text(value: str) -> dict[str, Any]:
    """A text block."""
    return {"type": "text", "text": value}


@dataclass
class Plan:
    """The assistant's turns for one scripted task; `usage` maps a turn to its input_tokens."""

    turns: list[Turn]
    usage: dict[int, int] = field(default_factory=dict)


@dataclass
class Standin:
    """The server's script and what it received."""

    plans: dict[str, Plan]
    summary: str = "The user asked for the CSV export fix; work continues."
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    on_compact: Callable[[], None] | None = None  # runs before the summary is sent (a delay)

    def answer(self, body: dict[str, Any]) -> tuple[Turn, str, int]:
        """(content blocks, stop_reason, input_tokens) for one request."""
        with self.lock:
            self.requests.append(body)
        last = _last_user_text_and_results(body)
        if COMPACT_ASK in last[0]:
            if self.on_compact is not None:
                self.on_compact()
            reply = (
                "<analysis>\nThe conversation so far, in order.\n</analysis>\n\n"
                f"<summary>\n1. Primary Request and Intent:\n   {self.summary}\n</summary>"
            )
            return [text(reply)], "end_turn", 2000
        step = _next_step(last, self.plans) if body.get("tools") else None
        if step is None:
            return [text("OK.")], "end_turn", 1000
        name, index = step
        plan = self.plans[name]
        blocks = []
        for n, block in enumerate(plan.turns[index]):
            if block["type"] == "tool_use":
                tool_id = f"toolu_{name}_{index}" + (f"x{n}" if n else "")
                blocks.append({**block, "id": tool_id})
            else:
                blocks.append(block)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        return blocks, stop, plan.usage.get(index, 3000)


def _last_user_text_and_results(body: dict[str, Any]) -> tuple[str, list[str]]:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    if not users:
        return "", []
    content = users[-1].get("content")
    if isinstance(content, str):
        return content, []
    texts, results = [], []
    for block in content or []:
        if block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result":
            results.append(str(block.get("tool_use_id", "")))
    return "\n".join(texts), results


def _next_step(last: tuple[str, list[str]], plans: dict[str, Plan]) -> tuple[str, int] | None:
    text_part, results = last
    for result in results:
        m = _RESULT.match(result.split("x")[0] if "x" in result else result)
        if m and m.group(1) in plans:
            index = int(m.group(2)) + 1
            return (m.group(1), index) if index < len(plans[m.group(1)].turns) else None
    m = _PLAN.search(text_part)
    if m and m.group(1) in plans:
        return m.group(1), 0
    return None


def serve(standin: Standin) -> tuple[ThreadingHTTPServer, int]:
    """Start the server on 127.0.0.1 in a daemon thread; returns (server, port)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.startswith("/v1/messages/count_tokens"):
                self._json({"input_tokens": 1000})
                return
            if not self.path.startswith("/v1/messages"):
                self.send_error(404)
                return
            blocks, stop, input_tokens = standin.answer(body)
            message = {
                "id": f"msg_{len(standin.requests)}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", "claude"),
                "content": blocks,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": 50},
            }
            if body.get("stream"):
                self._stream(message)
            else:
                self._json(message)

        def _json(self, doc: dict[str, Any]) -> None:
            data = json.dumps(doc).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, message: dict[str, Any]) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.end_headers()
            head = {**message, "content": [], "stop_reason": None}
            head["usage"] = {"input_tokens": message["usage"]["input_tokens"], "output_tokens": 1}
            self._event("message_start", {"type": "message_start", "message": head})
            for i, block in enumerate(message["content"]):
                if block["type"] == "text":
                    start = {"type": "text", "text": ""}
                    delta = {"type": "text_delta", "text": block["text"]}
                else:
                    start = {**block, "input": {}}
                    delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                self._event(
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": start},
                )
                self._event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": i, "delta": delta},
                )
                self._event("content_block_stop", {"type": "content_block_stop", "index": i})
            self._event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": 50},
                },
            )
            self._event("message_stop", {"type": "message_stop"})

        def _event(self, name: str, data: dict[str, Any]) -> None:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]
