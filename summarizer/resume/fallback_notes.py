"""Notes from the spool's tail alone, for when the full notes are not ready (redacted)."""

# Never silent: after a compaction something useful goes back even if the index could not be
# built in time (no daemon, a loaded machine). The last bytes of the spool hold the session's
# latest request and the files it touched; todos.json holds its tasks. No tokenizer here: the
# text is kept short by construction (a few capped lines).
# The spool holds payloads as Claude Code sent them: every piece taken from it is redacted,
# whole, before it is cut to a line (a key cut first could lose what its rule recognises).
# This path runs only when the build timed out, so the redaction rules' first use here (tens
# of milliseconds) is not on the usual SessionStart path.

from __future__ import annotations

import os
import time

from indexer import redact_text
from summarizer.common.acks import is_acknowledgement, note_ack
from summarizer.resume.fastjson import loads
from summarizer.resume.spool_tail import TAIL_BYTES, read_tail

__all__ = ["fallback_notes"]

_EDIT_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
_READ_TOOLS = ("Read", "NotebookRead")
_MAX_FILES = 10


def fallback_notes(state_dir: str, session_id: str, head: str) -> str:
    """The latest request, open tasks and recent files of a session, headed by `head`; "" if
    nothing is known."""
    prompt, files = _from_spool(os.path.join(state_dir, "spool"), session_id)
    tasks = _open_tasks(os.path.join(state_dir, "sessions", session_id, "todos.json"))
    if not (prompt or files or tasks):
        return ""
    now = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    out = [
        f"{head} ({session_id[:8]}), recorded at {now} UTC from its latest events only"
        " (the full notes were not ready in time)."
    ]
    if prompt:
        out.append("Most recent user request: " + _line(redact_text(prompt), 600))
    if tasks:
        out += ["", "Open tasks:", *tasks]
    if files:
        out += ["", "Files worked on lately:"]
        out += [f"- {_line(redact_text(path), 300)} ({kind})" for path, kind in files]
    return "\n".join(out) + "\n"


def _from_spool(spool: str, session_id: str) -> tuple[str, list[tuple[str, str]]]:
    try:
        names = sorted(n for n in os.listdir(spool) if n.endswith(".jsonl"))
    except OSError:
        return "", []
    needle = session_id.encode()
    prompt = ack = ""
    files: dict[str, str] = {}
    budget = TAIL_BYTES
    for name in reversed(names):
        if budget <= 0 or (prompt and len(files) >= _MAX_FILES):
            break
        data, budget = read_tail(os.path.join(spool, name), budget)
        for line in reversed(data.split(b"\n")):
            if needle not in line:
                continue
            try:
                event = loads(line).get("event")
            except (ValueError, AttributeError):
                continue
            if not isinstance(event, dict) or event.get("session_id") != session_id:
                continue
            name_ = event.get("hook_event_name")
            # A subagent's UserPromptSubmit (Codex sends one) is its task, not the user's.
            if name_ == "UserPromptSubmit" and not prompt and not event.get("agent_id"):
                text = str(event.get("prompt") or "")
                if is_acknowledgement(text):  # never the request: noted after it
                    ack = ack or text
                else:
                    prompt = note_ack(text, ack) if ack else text
            tool_input = event.get("tool_input")
            path = tool_input.get("file_path") if isinstance(tool_input, dict) else None
            tool = event.get("tool_name")
            if isinstance(path, str) and path and len(files) < _MAX_FILES:
                if tool in _EDIT_TOOLS:
                    files[path] = "edited"  # newest first: an older edit still counts
                elif tool in _READ_TOOLS:
                    files.setdefault(path, "read")
    return prompt, list(files.items())


def _open_tasks(path: str) -> list[str]:
    try:
        with open(path, "rb") as f:
            doc = loads(f.read())
    except (OSError, ValueError):
        return []
    todos = doc.get("todos") if isinstance(doc, dict) else None
    out = []
    for t in todos if isinstance(todos, list) else []:
        if isinstance(t, dict) and t.get("status") in ("pending", "in_progress"):
            # todos.json is written from redacted entries; one an older ctxd wrote may not be.
            content = redact_text(str(t.get("content")))
            out.append(f"- [{str(t['status']).replace('_', ' ')}] {_line(content, 200)}")
    return out[:10]


def _line(text: str, limit: int) -> str:
    # Control bytes out (ANSI escapes lose their ESC and become harmless text), one line.
    line = " ".join("".join(c if c >= " " or c in "\t\n" else " " for c in text).split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
