"""Optional summary backend: pipe the extracted material to a user command, clamp its answer."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from typing import Protocol

from indexer import SummarizerConfig
from summarizer.common.budget import pack_items, utf16_len
from summarizer.common.tokens import TokenCounter, sanitize

log = logging.getLogger("ctxd.backend")

MAX_CHARS = 10_000
_OUTPUT_BYTES = 1 << 20  # a runaway command cannot make us hold more than this

PROMPT = """You maintain the running summary of a software project for an AI coding agent.
Rewrite the material below as a factual summary of the project's current state: what is being
built, what is done, what is in progress, the files involved, and open problems. Plain text,
short lines, no preamble, at most {max_tokens} tokens. Do not invent facts.

--- material ---
"""


class SummaryBackend(Protocol):
    """Turns extracted material into a summary; None means "use the extractive summary"."""

    def summarize(self, material: str, max_tokens: int) -> str | None: ...


def clamp(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """`text` cut to `max_tokens` tokens and MAX_CHARS UTF-16 units, line by line."""
    lines = [line.rstrip() for line in sanitize(text).strip().split("\n")]
    kept = pack_items(
        lines,
        max_tokens,
        counter.count,
        max_chars=MAX_CHARS,
        truncate=counter.truncate,
        char_len=utf16_len,
    )
    return "\n".join(kept).strip()


class CommandBackend:
    """`backend = "command"`: runs `command` with the prompt on stdin, with a timeout."""

    def __init__(self, command: list[str], timeout_s: float, counter: TokenCounter) -> None:
        self.command = command
        self.timeout_s = timeout_s
        self.counter = counter

    def summarize(self, material: str, max_tokens: int) -> str | None:
        """The command's answer clamped to the budget, or None on any failure (logged)."""
        prompt = PROMPT.format(max_tokens=max_tokens) + material
        try:
            proc = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # so a timeout can kill the command's children too
            )
        except OSError as e:
            log.warning(
                "summary command %r cannot start (%s); using the extractive summary",
                self.command[0],
                e,
            )
            return None
        try:
            out, err = proc.communicate(prompt.encode("utf-8", "replace"), timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            log.warning(
                "summary command timed out after %.0f s ([summarizer] command_timeout_s);"
                " using the extractive summary",
                self.timeout_s,
            )
            return None
        if proc.returncode != 0:
            log.warning(
                "summary command exited with %d (%s); using the extractive summary",
                proc.returncode,
                err[:200].decode("utf-8", "replace").strip(),
            )
            return None
        text = clamp(out[:_OUTPUT_BYTES].decode("utf-8", "replace"), max_tokens, self.counter)
        return text or None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    proc.communicate()


def backend_for(cfg: SummarizerConfig, counter: TokenCounter) -> SummaryBackend | None:
    """The configured backend, or None for the default extractive summary."""
    if cfg.backend == "command" and cfg.command:
        return CommandBackend(list(cfg.command), cfg.command_timeout_s, counter)
    return None
