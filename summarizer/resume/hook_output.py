"""The SessionStart hook's JSON output, its text capped as Claude Code counts it (stdlib only)."""

from __future__ import annotations

from summarizer.resume.fastjson import encode_string
from summarizer.resume.files import MAX_CONTEXT_CHARS


def hook_output(text: str, max_chars: int = MAX_CONTEXT_CHARS) -> str:
    """`{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":…}}`."""
    context = cap(text, max_chars).encode("utf-8", "replace").decode("utf-8")
    return (
        '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":'
        + encode_string(context)
        + "}}\n"
    )


def cap(text: str, max_chars: int) -> str:
    """`text` within `max_chars` UTF-16 units (how Claude Code counts), cut at a line end."""
    if len(text) <= max_chars // 2 or utf16_len(text) <= max_chars:
        return text
    units = 0
    end = len(text)
    for i, ch in enumerate(text):
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > max_chars:
            end = i
            break
    cut = text[:end]
    line_end = cut.rfind("\n")
    return cut[:line_end] if line_end > max_chars // 2 else cut


def utf16_len(text: str) -> int:
    """Length of `text` in UTF-16 code units."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2
