"""The bounded tables of short texts and JSON member names: their size and length limits, and
that a remembered answer is the one given.

mutmut forks its runs from a process whose tables an earlier test run filled, so each test
starts from emptied tables and uses names of its own.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from indexer.redact import text as redact
from indexer.redact.text import redact_text


@pytest.fixture(autouse=True)
def empty_tables() -> Iterator[None]:
    redact._TEXTS.clear()
    redact._KEYS.clear()
    yield
    redact._TEXTS.clear()
    redact._KEYS.clear()


def test_a_text_at_the_length_limit_is_remembered_and_one_longer_is_not() -> None:
    limit = redact._CACHED_TEXT_CHARS
    at_limit = "a" * limit
    longer = "b" * (limit + 1)
    assert redact_text(at_limit) is at_limit and redact_text(longer) is longer
    assert at_limit in redact._TEXTS and longer not in redact._TEXTS


def test_the_text_table_never_holds_more_than_its_bound() -> None:
    for i in range(redact._CACHED_TEXTS + 1):
        redact_text(f"t{i}")
        assert len(redact._TEXTS) <= redact._CACHED_TEXTS


def test_a_member_name_is_remembered_with_its_redaction() -> None:
    secret_name = "AKIAZ7Q2LMXW4RTP9KDN"  # an access key id used as a member name
    hidden = redact_text(secret_name)
    assert hidden != secret_name
    out = redact._redact_json({secret_name: 1, "plain_name": 2})
    assert list(out) == [hidden, "plain_name"]
    assert {secret_name: hidden, "plain_name": "plain_name"} == redact._KEYS


def test_a_remembered_member_name_is_the_answer_given() -> None:
    # The table is consulted before any redaction: what it holds for a name is what comes out.
    redact._KEYS["cached_name"] = "as_remembered"
    assert list(redact._redact_json({"cached_name": 1})) == ["as_remembered"]


def test_member_names_at_the_length_limit_are_remembered_and_longer_ones_not() -> None:
    limit = redact._CACHED_KEY_CHARS
    at_limit, longer = "k" * limit, "m" * (limit + 1)
    redact._redact_json({at_limit: 1, longer: 2})
    assert at_limit in redact._KEYS and longer not in redact._KEYS


def test_the_member_name_table_never_holds_more_than_its_bound() -> None:
    for i in range(redact._CACHED_KEYS + 1):
        redact._redact_json({f"name{i}": i})
        assert len(redact._KEYS) <= redact._CACHED_KEYS
