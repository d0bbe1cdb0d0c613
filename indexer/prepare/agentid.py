"""Agent-instance ids: `AgentId: <id>` extraction, validation, deterministic fallback (seed 000)."""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from collections.abc import Callable

from indexer.paths import RESERVED_VIEW_NAMES

MAX_AGENT_ID_LEN = 64

# The seed's pattern, with three changes a reviewer should know about:
# - re.ASCII: with IGNORECASE alone, Python's [a-z] also matches "ſ" (U+017F) and the Kelvin
#   sign (U+212A), which would let non-ASCII ids through (and "K".lower() is a plain "k").
# - a trailing lookahead: the id must end the token (whitespace, end of text, a backslash as in
#   the seed's literal "\n", or trailing punctuation followed by one of those). Otherwise
#   "invalid@id!" would yield "invalid" and 65 a's would yield their first 64, where the seed
#   expects the fallback.
# - a literal backslash-n/r/t before the key also counts as a word boundary: the seed's own tests
#   write prompts with a literal "\n" (Go "\\n"), and double-escaped prompts do occur.
AGENT_ID_RE: re.Pattern[str] = re.compile(
    r"(?:(?<=\\[nrt])|\b)AgentId\s*:\s*([a-zA-Z0-9][a-zA-Z0-9\-_]{0,62}[a-zA-Z0-9])"
    r"(?=[.,;:!?)\]}>\"'`*]*(?:[\s\\]|$))",
    re.IGNORECASE | re.ASCII,
)
_VALID_RE = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9\-_]{0,62}[a-zA-Z0-9]", re.ASCII)
_TYPE_BAD_RUN_RE = re.compile(r"[^a-z0-9_-]+", re.ASCII)

# "main" is the orchestrator's view; the session directory's own files (RESERVED_VIEW_NAMES)
# share it with the `<agent_id>.jsonl` views, so their stems may never be agent ids either.
RESERVED_AGENT_IDS = frozenset({"main", "global", "system"}) | RESERVED_VIEW_NAMES

# "-YYYYMMDD-HHMMSS-hash8" is 25 characters and disambiguate() may add "-999" (4 more), so the
# agent-type part keeps at most 64 - 29 = 35 characters.
_TYPE_MAX_LEN = MAX_AGENT_ID_LEN - 25 - 4
_MAX_DISAMBIGUATION = 999
_MAX_UUID_TRIES = 16
# gmtime() of later instants gives 5-digit years, which would break the fixed-width format.
_MAX_EPOCH_S = 253402300799  # 9999-12-31T23:59:59Z


def is_valid_agent_id(agent_id: str) -> bool:
    """True if agent_id is 2..64 ASCII letters, digits, '-' or '_', starting and ending alnum."""
    return _VALID_RE.fullmatch(agent_id) is not None


def extract_agent_id(prompt: str) -> str | None:
    """The lower-cased id of the first well-formed `AgentId: <id>` in prompt, or None.

    None when there is no such marker, or the first one names a reserved id.
    """
    m = AGENT_ID_RE.search(prompt)
    if m is None:
        return None
    agent_id = m.group(1).strip().lower()
    if not is_valid_agent_id(agent_id) or agent_id in RESERVED_AGENT_IDS:
        return None
    return agent_id


def sanitize_agent_type(agent_type: str) -> str:
    """A subagent type as an id part: lower-case, runs of other characters as '-', ≤ 35 chars.

    "Explore" -> "explore", "plugin:foo bar" -> "plugin-foo-bar", "" -> "agent".
    """
    cleaned = _TYPE_BAD_RUN_RE.sub("-", agent_type.lower()).strip("-_")
    cleaned = cleaned[:_TYPE_MAX_LEN].rstrip("-_")
    return cleaned or "agent"


def fallback_agent_id(prompt: str, agent_type: str, session_id: str, ts_ns: int) -> str:
    """The seed's deterministic id `{type}-{YYYYMMDD-HHMMSS}-{hash8}` for a prompt without AgentId.

    The time is the event's own timestamp (UTC), not the clock, so rebuilding the index from the
    spool gives the same ids. hash8 = sha256("{session_id}:{agent_type}:{prompt[:100]}")[:8].
    """
    seconds = min(max(ts_ns // 1_000_000_000, 0), _MAX_EPOCH_S)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(seconds))
    # surrogatepass: JSON may carry lone surrogates ("\ud800"), which strict UTF-8 rejects.
    digest_input = f"{session_id}:{agent_type}:{prompt[:100]}".encode("utf-8", "surrogatepass")
    hash8 = hashlib.sha256(digest_input).hexdigest()[:8]
    return f"{sanitize_agent_type(agent_type)}-{stamp}-{hash8}"


def extract_or_fallback(prompt: str, agent_type: str, session_id: str, ts_ns: int) -> str:
    """extract_agent_id(prompt), else fallback_agent_id(...): always a valid, unreserved id."""
    return extract_agent_id(prompt) or fallback_agent_id(prompt, agent_type, session_id, ts_ns)


def _with_suffix(base_id: str, suffix: str) -> str:
    # Trim the base so that base + suffix stays ≤ 64; the trimmed base must still end alnum.
    head = base_id[: MAX_AGENT_ID_LEN - len(suffix)].rstrip("-_")
    return head + suffix


def disambiguate(base_id: str, taken: Callable[[str], bool]) -> str:
    """base_id if not taken, else the first free of base_id-2 … base_id-999, else a uuid suffix.

    base_id is trimmed as needed so that the result stays ≤ 64 characters and valid.

    Raises ValueError if base_id is not a valid id: callers validate before they get here.
    """
    if not is_valid_agent_id(base_id):
        raise ValueError(f"invalid agent id: {base_id!r}")
    if not taken(base_id):
        return base_id
    for n in range(2, _MAX_DISAMBIGUATION + 1):
        candidate = _with_suffix(base_id, f"-{n}")
        if not taken(candidate):
            return candidate
    # Random on purpose: a thousand collisions means the deterministic space is exhausted.
    # Bounded, so that a predicate that answers True for everything cannot hang the indexer.
    candidate = base_id
    for _ in range(_MAX_UUID_TRIES):
        candidate = _with_suffix(base_id, "-" + uuid.uuid4().hex[:8])
        if not taken(candidate):
            break
    return candidate
