"""indexer.prepare.agentid edge cases that mutation testing found untested.

Expected values are written out from the documented rules (the hash input, the suffix
numbering), not taken from the functions under test.
"""

from __future__ import annotations

import hashlib
import re

from indexer.prepare.agentid import disambiguate, extract_or_fallback, fallback_agent_id

TS = 1_755_009_022_123_456_789  # 2025-08-12 14:30:22 UTC


def test_fallback_hashes_a_lone_surrogate_instead_of_failing() -> None:
    prompt = "check \ud800 this"  # JSON may carry lone surrogates
    digest = hashlib.sha256("s1:Explore:check \ud800 this".encode("utf-8", "surrogatepass"))
    expected = f"explore-20250812-143022-{digest.hexdigest()[:8]}"
    assert fallback_agent_id(prompt, "Explore", "s1", TS) == expected
    assert extract_or_fallback(prompt, "Explore", "s1", TS) == expected


def test_fallback_depends_on_the_session() -> None:
    one = extract_or_fallback("do it", "Explore", "s1", TS)
    other = extract_or_fallback("do it", "Explore", "s2", TS)
    assert one != other
    assert one.endswith(hashlib.sha256(b"s1:Explore:do it").hexdigest()[:8])


def test_numbered_suffixes_stop_at_999() -> None:
    base = "explore-20250812-143022-0a1b2c3d"
    # Everything up to -999 is taken; -1000 would be free but is not a numbered candidate.
    got = disambiguate(base, lambda c: c != f"{base}-1000")
    assert re.fullmatch(re.escape(base) + r"-[0-9a-f]{8}", got), got


def test_the_random_suffix_is_retried_until_free() -> None:
    base = "qa-1"
    answered_taken: set[str] = set()
    random_seen: list[str] = []

    def taken(candidate: str) -> bool:
        if re.fullmatch(r"qa-1(-\d{1,3})?", candidate):
            answered_taken.add(candidate)
            return True
        random_seen.append(candidate)
        if len(random_seen) == 1:  # the first random suffix collides too
            answered_taken.add(candidate)
            return True
        return False

    got = disambiguate(base, taken)
    assert got not in answered_taken
    assert got == random_seen[1]


def test_a_trimmed_base_keeps_its_last_letter() -> None:
    base = "a" * 61 + "XYZ"  # 64 characters: trimmed to 62 before "-2"
    got = disambiguate(base, lambda c: c == base)
    assert got == "a" * 61 + "X-2"
