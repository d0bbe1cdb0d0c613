"""Text fit to hand back: no ANSI or control bytes, no mangled characters, no wrapper tags."""

from __future__ import annotations

import re

__all__ = [
    "clean_line",
    "clean_text",
    "first_error_line",
    "is_meaningful_request",
    "unwrap_summary",
]

# CSI/OSC escapes, and ESC-less remnants of colour codes ("[31m✘ [41;31m[ERROR").
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")
_BARE_SGR = re.compile(r"\[(?:\d{1,3}(?:;\d{1,3})*)?m")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_MANGLED = re.compile(r"[\ufffd\ufffe\uffff]+")
_SUMMARY = re.compile(r"<summary>\s*(.*?)\s*(?:</summary>|$)", re.S)
_ANALYSIS = re.compile(r"<analysis>.*?(?:</analysis>|$)", re.S)
_NOISE = re.compile(r"(?i)^(?:warning|warn|note|info|hint)\b[:\s]")
_EXIT = re.compile(r"^Exit code \d+$")
# Requests that say nothing about the work ("continue", "let's do it") do not make a title.
_NOT_A_TITLE = re.compile(
    r"(?i)^\W*(?:ok(?:ay)?|yes|yep|sure|go(?: on| ahead)?|continue|proceed|do it|let'?s do it"
    r"|let'?s go|next|thanks?(?: you)?|please|resume|retry|again|/\w+)\W*$"
)


def clean_text(text: str) -> str:
    """`text` without escape sequences, control bytes (newlines and tabs kept) or U+FFFD runs."""
    text = _ANSI.sub("", text)
    text = _BARE_SGR.sub("", text)
    text = _MANGLED.sub("", text)
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def clean_line(text: str, limit: int) -> str:
    """`text` cleaned and folded to one line of at most `limit` characters."""
    line = " ".join(clean_text(text).split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def unwrap_summary(text: str) -> str:
    """Claude Code's compaction summary without its <analysis> part and <summary> tags."""
    found = _SUMMARY.search(text)
    if found:
        return found.group(1).strip()
    return _ANALYSIS.sub("", text).strip()


def is_meaningful_request(line: str) -> bool:
    """True if a request's first line says what the work is (so it can title a session)."""
    line = line.strip()
    return bool(line) and not _NOT_A_TITLE.match(line) and len(line.split()) >= 2


def first_error_line(error: str) -> str:
    """The first line that says what went wrong: not the `Exit code N` line, not a warning."""
    lines = [" ".join(ln.split()) for ln in clean_text(error).splitlines()]
    lines = [ln for ln in lines if ln and not _EXIT.match(ln)]
    meaningful = [ln for ln in lines if not _NOISE.match(ln)]
    for ln in meaningful:
        if re.search(r"(?i)error|fail|fatal|not found|denied|cannot|can't|no such|invalid", ln):
            return ln
    return (meaningful or lines or [""])[0]
