"""SessionStart in Codex CLI: its output limit, and when a resumed thread needs the notes."""

# Codex hands a SessionStart `additionalContext` to the model as a developer message, kept in
# the thread (and its rollout) until the next compaction drops it. Text whose estimate passes
# 2,500 tokens, at 4 bytes a token, is saved to a file and only a preview reaches the model:
# the notes stay under 10,000 bytes of UTF-8. After a compaction Codex runs SessionStart with
# source "compact", also when the compaction ran as a resumed thread's first turn began, just
# before that thread's SessionStart "resume": then "compact" hands the notes back and "resume"
# must not add a second copy. Verified against @openai/codex 0.171.0.
# Runs inside the hook: standard library only.

from __future__ import annotations

import os

from summarizer.resume.handback import NOTES_HEAD, LiveContext, read_back_to
from summarizer.resume.spool_tail import event_name, session_lines

__all__ = [
    "CODEX_MAX_CONTEXT_BYTES",
    "COMPACT_FOLLOWS",
    "HOST",
    "cap_bytes",
    "compaction_just_ran",
    "live_context",
]

HOST = "codex"
# Codex keeps hook output whole up to ceil(bytes / 4) = 2,500 tokens, i.e. 10,000 bytes; the
# margin covers a version that counts a few bytes more (a footer, a separator).
CODEX_MAX_CONTEXT_BYTES = 9_800
COMPACT_FOLLOWS = (
    "a compaction just ran as the resumed thread began: Codex's SessionStart(compact) that"
    " follows hands the notes back"
)
_COMPACTED = b'"type":"compacted"'
_NOTES = b'"text":"' + NOTES_HEAD.encode()


def cap_bytes(text: str, max_bytes: int = CODEX_MAX_CONTEXT_BYTES) -> str:
    """`text` within `max_bytes` of UTF-8, cut at a line end when one is in the second half."""
    data = text.encode("utf-8", "replace")
    if len(data) <= max_bytes:
        return text
    cut = data[:max_bytes].decode("utf-8", "ignore")  # a character cut in two is dropped
    line_end = cut.rfind("\n")
    return cut[:line_end] if line_end > len(cut) // 2 else cut


def live_context(rollout_path: object) -> LiveContext | None:
    """What a Codex thread holds, read backwards from its rollout's end to its last compaction:
    was it compacted, and are ctxd's notes in it since. None if the rollout cannot be read."""
    return read_back_to(rollout_path, _COMPACTED, _NOTES, "rollout", notes_in_marker=False)


def compaction_just_ran(state_dir: str, session_id: str) -> bool:
    """Whether the session's newest spooled event, SessionStarts aside, is a PostCompact: the
    compaction's own SessionStart "compact" is about to hand the notes back."""
    for lines in session_lines(os.path.join(state_dir, "spool"), session_id):
        for line in lines:
            event = event_name(line)
            if event != b"SessionStart":
                return event == b"PostCompact"
    return False
