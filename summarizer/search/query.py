"""User search text -> a safe FTS5 expression; dates -> nanoseconds (pure)."""

from __future__ import annotations

import calendar
import re
import time

from indexer import CtxdError

# A word is what FTS5's unicode61 tokenizer keeps: letters, digits (and marks). Anything
# else separates words, so only the words of the user's text reach FTS5, each quoted.
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
MAX_TERMS = 16
_DATE_FORMATS = ("%Y-%m-%d", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M")


class SearchQueryError(CtxdError):
    """The search text or a filter cannot be used (says what to type instead)."""


def to_match(text: str) -> str:
    """An FTS5 MATCH expression finding documents with every word of `text`.

    FTS5 syntax in the text (quotes, `AND`, `NEAR`, `col:`, parentheses) is taken literally:
    every token becomes a quoted phrase of its words, so no user text makes it invalid.
    `word*` keeps its meaning of a prefix search.
    """
    return " ".join(
        '"' + " ".join(words) + '"' + ("*" if prefix else "") for words, prefix in terms(text)
    )


def terms(text: str) -> list[tuple[list[str], bool]]:
    """The phrases of `text`: each whitespace-separated token's words (letters and digits
    only, as the index splits them) and whether it ends in `*` (a prefix search)."""
    found_terms: list[tuple[list[str], bool]] = []
    words = 0
    for raw in text.split():
        found = _WORD.findall(raw)
        if not found:
            continue
        words += len(found)
        # One whitespace-separated token is one phrase: `src/app.py` finds those words in a row.
        found_terms.append((found, raw.endswith("*")))
    if not found_terms:
        raise SearchQueryError(
            f"nothing to search for in {text!r}: give at least one word of letters or digits"
        )
    if words > MAX_TERMS:
        raise SearchQueryError(f"too many words ({words}); give at most {MAX_TERMS}")
    return found_terms


_MAX_NS = 2**63 - 1


def parse_since(text: str) -> int:
    """A UTC date or date-time (YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS], optional Z) in ns."""
    value = text.strip().removesuffix("Z")
    for fmt in _DATE_FORMATS:
        try:
            ns = calendar.timegm(time.strptime(value, fmt)) * 1_000_000_000
        except ValueError:
            continue
        # Times are SQLite integers (ns, 64-bit): a date outside them selects all or nothing.
        return max(0, min(ns, _MAX_NS))
    raise SearchQueryError(
        f"--since {text!r} is not a date; use YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC)"
    )
