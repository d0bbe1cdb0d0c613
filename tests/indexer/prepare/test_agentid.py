"""Tests for indexer.prepare.agentid: seed 000 §6.1.1 cases, fallback format, disambiguation, properties."""

from __future__ import annotations

import hashlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from indexer.prepare.agentid import (
    AGENT_ID_RE,
    RESERVED_AGENT_IDS,
    disambiguate,
    extract_agent_id,
    extract_or_fallback,
    fallback_agent_id,
    is_valid_agent_id,
    sanitize_agent_type,
)

SESSION = "dev-20250812-143022"
# 2025-08-12T14:30:22.123456789Z
TS_NS = 1_755_009_022_123_456_789


# Seed §6.1.1 TestExtractAgentID_ValidCases. The seed's Go "\\n" is a literal backslash-n;
# each case is run both with that and with a real newline.
@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        pytest.param(
            "AgentId: arch-001{nl}Design authentication system", "arch-001", id="standard"
        ),
        pytest.param(
            "agentid: dev-frontend{nl}Implement UI components", "dev-frontend", id="case-key"
        ),
        pytest.param("agentid: Dev-Frontend{nl}Implement", "dev-frontend", id="case-value"),
        pytest.param(
            "AgentId  :   test-integration-auth   {nl}Run tests",
            "test-integration-auth",
            id="spaces",
        ),
        pytest.param(
            "AgentId: sec_audit-2024{nl}Security audit", "sec_audit-2024", id="hyphen-underscore"
        ),
        pytest.param("AgentId: " + "a" * 64 + "{nl}Long task", "a" * 64, id="max-length"),
        pytest.param("AgentId: ab{nl}x", "ab", id="min-length"),
        pytest.param("Context first.{nl}AgentId: qa-7{nl}Then work", "qa-7", id="not-first-line"),
        pytest.param("AgentId: rev-1.", "rev-1", id="trailing-period"),
        pytest.param("(AgentId: rev-2)", "rev-2", id="in-parens"),
        pytest.param("AgentId: x@y then AgentId: good-1", "good-1", id="first-well-formed"),
    ],
)
@pytest.mark.parametrize("nl", ["\\n", "\n"], ids=["literal-backslash-n", "newline"])
def test_extract_valid(prompt: str, expected: str, nl: str) -> None:
    assert extract_agent_id(prompt.format(nl=nl)) == expected


# Seed §6.1.1 TestExtractAgentID_InvalidCases, plus a few more ways to be malformed.
@pytest.mark.parametrize(
    ("prompt", "agent_type"),
    [
        pytest.param("Design authentication system", "the-architect", id="absent"),
        pytest.param("AgentId: invalid@id!\\nWork on task", "the-developer", id="invalid-chars"),
        pytest.param("AgentId: a\\nShort ID", "the-tester", id="too-short"),
        pytest.param("AgentId: " + "a" * 65 + "\\nLong ID", "the-architect", id="too-long"),
        pytest.param("AgentId: main\\nReserved word", "the-developer", id="reserved"),
        pytest.param("AgentId: MAIN", "the-developer", id="reserved-upper"),
        pytest.param("AgentId: system", "the-developer", id="reserved-system"),
        pytest.param("AgentId: global", "the-developer", id="reserved-global"),
        pytest.param("AgentId: dev-", "the-developer", id="ends-hyphen"),
        pytest.param("AgentId: -dev", "the-developer", id="starts-hyphen"),
        pytest.param("AgentId: ../../etc", "the-developer", id="traversal"),
        pytest.param("AgentId: café-1", "the-developer", id="non-ascii"),
        pytest.param("AgentId: \u017fecret", "the-developer", id="long-s-not-ascii"),
        pytest.param("MyAgentId: dev-1", "the-developer", id="no-word-boundary"),
        pytest.param("AgentId dev-1", "the-developer", id="no-colon"),
    ],
)
def test_extract_invalid_falls_back(prompt: str, agent_type: str) -> None:
    assert extract_agent_id(prompt) is None
    result = extract_or_fallback(prompt, agent_type, SESSION, TS_NS)
    assert re.match(rf"^{agent_type}-\d{{8}}-\d{{6}}-[a-f0-9]{{8}}", result)
    assert is_valid_agent_id(result)


def test_fallback_exact_value() -> None:
    prompt = "Implement user authentication"
    got = fallback_agent_id(prompt, "the-developer", SESSION, TS_NS)
    assert got.startswith("the-developer-20250812-143022-")
    want = hashlib.sha256(f"{SESSION}:the-developer:{prompt}".encode()).hexdigest()[:8]
    assert got == f"the-developer-20250812-143022-{want}"


def test_fallback_deterministic() -> None:
    # Seed TestDeterministicGeneration: same inputs, same id (the timestamp is an input here).
    args = ("Implement user authentication", "the-developer", SESSION, TS_NS)
    assert fallback_agent_id(*args) == fallback_agent_id(*args)
    assert extract_or_fallback(*args) == extract_or_fallback(*args)


def test_fallback_hash_uses_only_first_100_chars() -> None:
    base = "x" * 100
    assert fallback_agent_id(base + "a", "t", "s", TS_NS) == fallback_agent_id(
        base + "b", "t", "s", TS_NS
    )
    assert fallback_agent_id("a", "t", "s", TS_NS) != fallback_agent_id("b", "t", "s", TS_NS)
    assert fallback_agent_id("a", "t", "s1", TS_NS) != fallback_agent_id("a", "t", "s2", TS_NS)


@pytest.mark.parametrize(
    ("ts_ns", "stamp"),
    [
        (0, "19700101-000000"),
        (-5, "19700101-000000"),  # clamped: the format must stay fixed-width
        (10**30, "99991231-235959"),
        (TS_NS, "20250812-143022"),
    ],
)
def test_fallback_timestamp(ts_ns: int, stamp: str) -> None:
    assert fallback_agent_id("p", "Explore", "s", ts_ns).startswith(f"explore-{stamp}-")


@pytest.mark.parametrize(
    ("agent_type", "expected"),
    [
        ("Explore", "explore"),
        ("plugin:foo bar", "plugin-foo-bar"),
        ("", "agent"),
        ("---", "agent"),
        ("the-architect", "the-architect"),
        ("general_purpose", "general_purpose"),
        ("  Code Reviewer!! ", "code-reviewer"),
        ("日本語", "agent"),
        ("a" * 100, "a" * 35),
        ("a" * 34 + "-b", "a" * 34),  # truncation must not leave a trailing '-'
    ],
)
def test_sanitize_agent_type(agent_type: str, expected: str) -> None:
    assert sanitize_agent_type(agent_type) == expected


def test_long_agent_type_leaves_room_for_suffix() -> None:
    base = fallback_agent_id("p", "t" * 200, "s", TS_NS)
    assert len(base) == 60
    worst = disambiguate(base, lambda c: not c.endswith("-999"))
    assert worst == base + "-999"
    assert is_valid_agent_id(worst)


def test_disambiguate_free() -> None:
    assert disambiguate("dev-1", lambda _: False) == "dev-1"


def test_disambiguate_numbers() -> None:
    taken = {"dev-1", "dev-1-2", "dev-1-3"}
    assert disambiguate("dev-1", taken.__contains__) == "dev-1-4"


def test_disambiguate_exhausted_uses_uuid() -> None:
    got = disambiguate("dev-1", lambda c: not re.fullmatch(r"dev-1-[0-9a-f]{8}", c))
    assert re.fullmatch(r"dev-1-[0-9a-f]{8}", got)


def test_disambiguate_max_length_base() -> None:
    base = "a" * 63 + "b"
    got = disambiguate(base, lambda c: c == base)
    assert got == "a" * 62 + "-2"
    got = disambiguate(base, lambda c: not re.fullmatch(r"a{55}-[0-9a-f]{8}", c))
    assert len(got) == 64 and is_valid_agent_id(got)
    # A trimmed base ending in '-' or '_' is trimmed further so the id stays valid.
    base = "a" * 61 + "_-b"
    got = disambiguate(base, lambda c: c == base)
    assert got == "a" * 61 + "-2"


def test_disambiguate_rejects_invalid_base() -> None:
    with pytest.raises(ValueError, match="invalid agent id"):
        disambiguate("../x", lambda _: False)


def test_regex_exported_matches_seed_shape() -> None:
    m = AGENT_ID_RE.search("AgentId: arch-001\nwork")
    assert m is not None and m.group(1) == "arch-001"


@given(
    prompt=st.text(max_size=300),
    agent_type=st.text(max_size=80),
    session_id=st.text(max_size=80),
    ts_ns=st.integers(min_value=-(2**70), max_value=2**80),
)
def test_result_always_valid_and_unreserved(
    prompt: str, agent_type: str, session_id: str, ts_ns: int
) -> None:
    result = extract_or_fallback(prompt, agent_type, session_id, ts_ns)
    assert is_valid_agent_id(result)
    assert result not in RESERVED_AGENT_IDS
    assert result == result.lower()
    if extract_agent_id(prompt) is None:
        assert len(result) <= 64 - 4  # a fallback leaves room for a "-999" suffix


@given(
    agent_id=st.from_regex(r"\A[a-zA-Z0-9][a-zA-Z0-9_-]{0,62}[a-zA-Z0-9]\Z"),
    before=st.sampled_from(["", "Task:\n", "x "]),
    after=st.sampled_from(["", "\n", " more", "\\nmore", ". Then"]),
)
def test_embedded_valid_ids_are_extracted(agent_id: str, before: str, after: str) -> None:
    got = extract_agent_id(f"{before}AgentId: {agent_id}{after}")
    if agent_id.lower() in RESERVED_AGENT_IDS:
        assert got is None
    else:
        assert got == agent_id.lower()


@given(base=st.from_regex(r"\A[a-z0-9][a-z0-9_-]{0,62}[a-z0-9]\Z"), n_taken=st.integers(0, 1200))
def test_disambiguate_property(base: str, n_taken: int) -> None:
    seen: list[str] = []

    def taken(candidate: str) -> bool:
        seen.append(candidate)
        return len(seen) <= n_taken

    got = disambiguate(base, taken)
    assert is_valid_agent_id(got)
    assert got == seen[-1]
