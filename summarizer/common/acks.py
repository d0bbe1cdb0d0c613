"""Acknowledgements ("yes", "continue", "dale"): prompts that carry no request of their own."""

# Standard library only, and not even `re`: the SessionStart hook's fallback notes use it.

from __future__ import annotations

__all__ = ["is_acknowledgement", "latest_request", "note_ack"]

# In the languages of the prompts seen so far (English and Spanish); a prompt made only of
# these words (at most 8) acknowledges what came before.
_WORDS = frozenset(
    {
     "ok", "okay", "okey", "k", "yes", "yep", "yeah", "yup", "ya", "y", "sure", "right", "fine",
     "good", "great", "nice", "cool", "perfect", "thanks", "thank", "thx", "ty", "lgtm", "go",
     "on", "ahead", "proceed", "continue", "carry", "keep", "going", "do", "it", "please", "pls",
     "next", "done", "sounds", "looks", "si", "sí", "dale", "sigue", "segui", "seguí", "continua",
     "continúa", "continuar", "adelante", "listo", "vale", "perfecto", "bien", "genial", "bueno",
     "claro", "hazlo", "de", "acuerdo", "gracias", "vamos", "porfa",
    }
)
# Words that acknowledge only as part of a phrase ("go on", "do it", "thank you").
_ONLY_IN_PHRASES = frozenset({"on", "ahead", "carry", "keep", "going", "do", "it", "thank", "de",
                              "sounds", "looks"})  # fmt: skip
_PHRASES = frozenset(
    {"go on", "go ahead", "carry on", "keep going", "do it", "thank you", "de acuerdo",
     "sounds good", "looks good"}
)  # fmt: skip
MAX_ACK_CHARS = 60


def is_acknowledgement(prompt: str) -> bool:
    """True for a prompt that only acknowledges: "yes", "continue", "ok go ahead", "dale"."""
    text = prompt.strip()
    if not text or len(text) > MAX_ACK_CHARS:
        return False
    words = "".join(c.lower() if c.isalnum() or c == "'" else " " for c in text).split()
    if not words:
        return len(text) <= 10  # "👍", "!!"
    if len(words) > 8:
        return False
    i = 0
    while i < len(words):
        if " ".join(words[i : i + 2]) in _PHRASES:
            i += 2
        elif words[i] in _WORDS and words[i] not in _ONLY_IN_PHRASES:
            i += 1
        else:
            return False
    return True


def note_ack(request: str, ack: str) -> str:
    """The request with the acknowledgement that came after it noted."""
    return f'{request} (then: "{" ".join(ack.split())[:MAX_ACK_CHARS]}")' if request else ""


def latest_request(prompts_newest_first: list[str]) -> str:
    """The last prompt with content, with the newest acknowledgement after it noted; "" when
    every prompt given only acknowledges."""
    ack = ""
    for prompt in prompts_newest_first:
        if not is_acknowledgement(prompt):
            return note_ack(prompt, ack) if ack else prompt
        ack = ack or prompt
    return ""
