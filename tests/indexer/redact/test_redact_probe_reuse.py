"""Shortcuts inside redact_text: a text's probe hits passed on to its rules, and the table of
short texts already redacted, give exactly what redacting afresh gives."""

from __future__ import annotations

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexer.models import Entry
from indexer.redact import text as redact
from indexer.redact.scan import find_secrets, probe
from indexer.redact.text import _redact_layer, redact_text
from tests.planted_secrets import PLANTED

_CONTEXTS = [p.context.replace("{s}", p.secret) for p in PLANTED]
_FILLERS = ["", " ", "\n", "password=", "api_key: ", '"token": "', "://u:", "@h", "<private>"]


@st.composite
def secret_text(draw: st.DrawFn) -> str:
    """Planted secrets in their contexts, legacy gate words, and any text between them."""
    parts = []
    for _ in range(draw(st.integers(1, 6))):
        parts.append(draw(st.sampled_from(_CONTEXTS) | st.sampled_from(_FILLERS)))
        parts.append(draw(st.text(max_size=20) | st.text(string.printable, max_size=20)))
    return "".join(parts)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(secret_text())
def test_a_layer_with_the_known_hits_is_a_layer_with_a_fresh_probe(text: str) -> None:
    hits = probe(text.encode("utf-8", "surrogatepass"))[0]
    assert _redact_layer(text, hits) == _redact_layer(text)
    assert sorted(find_secrets(text, hits)) == sorted(find_secrets(text))


def test_every_planted_context_is_still_redacted() -> None:
    for planted in PLANTED:
        text = planted.context.replace("{s}", planted.secret)
        assert planted.secret not in redact_text(text), planted.kind


def test_empty_text_comes_back_as_is() -> None:
    assert redact_text("") == ""


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(secret_text())
def test_a_remembered_redaction_is_the_redaction(text: str) -> None:
    redact._TEXTS.clear()
    first = redact_text(text)
    copy = "".join(list(text))  # an equal string, another object
    again = redact_text(copy)
    assert again == first
    # Unchanged text comes back as the caller's own object, remembered or not.
    assert (again is copy) == (first is text)
    redact._TEXTS.clear()
    assert redact_text(copy) == first


def test_the_table_stays_bounded_and_keeps_only_short_texts() -> None:
    redact._TEXTS.clear()
    for i in range(redact._CACHED_TEXTS + 10):
        redact_text(f"/home/dev/project/file{i}.py")
    assert len(redact._TEXTS) <= redact._CACHED_TEXTS
    long = "x" * (redact._CACHED_TEXT_CHARS + 1)
    assert redact_text(long) is long and long not in redact._TEXTS


def _fresh(text: str) -> str:
    """redact_text without the table of remembered texts."""
    out = redact._redact_decoded(text, redact._BASE64_DEPTH)
    return text if out == text else out


_SHORT = st.sampled_from(["/home/dev/app", "Read /home/dev/app/x.py", "ls -la", "ok"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_SHORT | secret_text(), _SHORT | secret_text()), min_size=1, max_size=6))
def test_entries_sharing_fields_redact_as_each_field_alone(fields: list[tuple[str, str]]) -> None:
    """Fields remembered as clean by one entry are left out of the next entry's prefilter:
    every entry still comes out as its fields redacted one by one, afresh."""
    redact._TEXTS.clear()
    for n, (description, cwd) in enumerate(fields):
        entry = Entry(
            file_id=1,
            offset=n,
            line_no=n + 1,
            ts_ns=n,
            pid=1,
            session_id="s",
            hook_event="Stop",
            event="stop",
            description=description,
            cwd=cwd,
            files=(cwd,),
        )
        out = redact.redact_entry(entry)
        assert (out.description, out.cwd, out.files) == (
            _fresh(description),
            _fresh(cwd),
            (_fresh(cwd),),
        )
