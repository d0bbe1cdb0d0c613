"""The redaction shortcuts (prefilters, probe-located base64 runs, remembered member names)
redact exactly what the plain per-field, per-string redaction does."""

from __future__ import annotations

import base64
import json
import string
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexer.models import Entry, HookPayload
from indexer.prepare.normalize import PayloadError, normalize
from indexer.redact import scan as secret_scan
from indexer.redact import text as redact
from indexer.redact.decoded import base64_blobs, base64_run_spans
from indexer.redact.raw import redact_bytes
from indexer.redact.rules import RULES
from indexer.redact.scan import _START_WORDS, _matches, probe
from indexer.redact.text import _ENTRY_TEXT, redact_detail, redact_entry, redact_text
from tests.helpers import CORPUS

_PAYLOAD = msgspec.json.Decoder(HookPayload)
_LIMITS = {"max_text_chars": 20_000, "max_detail_bytes": 1 << 20}


def _slow_detail(raw: bytes) -> bytes:
    """redact_detail without any shortcut: every string of the JSON, then the member rules."""
    value = json.loads(raw)

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return redact_text(v)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {redact_text(k): walk(x) for k, x in v.items()}
        return v

    out = json.dumps(walk(value), ensure_ascii=False, separators=(",", ":")).encode()
    if walk(value) == value:
        out = raw
    return redact_bytes(out)


def _slow_entry(entry: Entry) -> Entry:
    """Every field redacted on its own, with no prefilter over the whole entry."""
    changes: dict[str, Any] = {name: redact_text(getattr(entry, name)) for name in _ENTRY_TEXT}
    changes["files"] = tuple(redact_text(f) for f in entry.files)
    detail = bytes(entry.detail)
    if detail:
        changes["detail"] = msgspec.Raw(_slow_detail(detail))
    return msgspec.structs.replace(entry, **changes)


def _corpus_entries() -> list[Entry]:
    entries = []
    for path in sorted((CORPUS / "hooks").rglob("*.jsonl")):
        for i, line in enumerate(path.read_bytes().splitlines()):
            try:
                payload = _PAYLOAD.decode(line)
                entry = normalize(
                    payload, ts_ns=i + 1, pid=1, file_id=1, offset=i, line_no=i, **_LIMITS
                )
            except (msgspec.DecodeError, PayloadError, ValueError):
                continue
            entries.append(entry)
    return entries


def _fields(entry: Entry) -> tuple[Any, ...]:
    return tuple(
        bytes(v) if isinstance(v, msgspec.Raw) else v
        for v in (getattr(entry, f) for f in entry.__struct_fields__)
    )


@pytest.mark.skipif(not (CORPUS / "hooks").is_dir(), reason="needs the hook corpus")
def test_corpus_entries_redact_as_the_plain_way() -> None:
    entries = _corpus_entries()
    assert len(entries) > 1000
    changed = 0
    for entry in entries:
        fast = redact_entry(entry)
        changed += fast is not entry
        assert _fields(fast) == _fields(_slow_entry(entry)), entry.offset
    assert changed > 10  # the corpus does hold secrets: the comparison covered redactions


_B64 = string.ascii_letters + string.digits + "+/-_="
SECRETS = [
    "sk-ant-api03-" + "Zq9" * 12,
    "AKIA" + "Q7ZX3WJ2KD5PLM4N",
    "ghp_" + "a1B2c3D4e5" * 4,
    "postgres://app:hunter2xyz@db.local/x",
]


@st.composite
def mixed_text(draw: st.DrawFn) -> str:
    """Text mixing words, punctuation, base64-looking runs and base64-hidden secrets."""
    parts = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.integers(0, 3))
        if kind == 0:  # any characters, non-ASCII included
            parts.append(draw(st.text(max_size=30) | st.text(string.printable, max_size=30)))
        elif kind == 1:
            parts.append(draw(st.text(alphabet=_B64, min_size=20, max_size=60)))
        elif kind == 2:
            secret = draw(st.sampled_from(SECRETS))
            parts.append(base64.b64encode(f"key {secret} end".encode()).decode())
        else:
            parts.append(draw(st.sampled_from(SECRETS)))
        parts.append(draw(st.sampled_from(["", " ", "=", "-", ".", "\n", '"', ":"])))
    return "".join(parts)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_text())
def test_probe_located_runs_are_the_searched_blobs(text: str) -> None:
    data = text.encode("utf-8", "surrogatepass")
    assert base64_run_spans(text, data, probe(data)[1]) == base64_blobs(text)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(st.text(max_size=12) | mixed_text(), mixed_text() | st.integers(), max_size=5)
)
def test_detail_redacts_as_the_plain_way(value: dict[str, Any]) -> None:
    raw = json.dumps(value, separators=(",", ":")).encode()
    assert redact_detail(raw) == _slow_detail(raw)


_WORDS = ["key", "KEY", "Token", "secret", "passwd", "PassWord", "auth", "credential", "salt"]


@st.composite
def assignment_text(draw: st.DrawFn) -> str:
    """Text dense in the entropy rule's words, assignments and key-looking values."""
    parts = []
    for _ in range(draw(st.integers(1, 10))):
        parts.append(draw(st.sampled_from(_WORDS)))
        parts.append(draw(st.sampled_from(["", "_id", ".x", "'", '"'])))
        parts.append(draw(st.sampled_from(["=", ": ", ":=", " => ", " ", ""])))
        parts.append(draw(st.text(_B64 + ".~", min_size=0, max_size=40)))
        parts.append(draw(st.text(max_size=6) | st.sampled_from([" ", "\n", ","])))
    return "".join(parts)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(assignment_text())
def test_word_located_matches_are_finditer(text: str) -> None:
    for rule in RULES:
        if rule.kind in _START_WORDS:
            fast = [m.span() for m in _matches(rule.pattern, rule.kind, text)]
            assert fast == [m.span() for m in rule.pattern.finditer(text)]


# Non-ASCII text: accents and CJK around the words, and the four letters that `(?i)` folds to
# ASCII ones (İ ı ſ, the Kelvin sign) in place of the words' own (`ſecret`, `\u212aey`).
_FOLDS = {"i": "\u0130\u0131", "s": "\u017f", "k": "\u212a"}


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(assignment_text(), st.data())
def test_word_located_matches_are_finditer_on_non_ascii_text(
    text: str, data: st.DataObject
) -> None:
    chars = list(text)
    for i, c in enumerate(chars):
        folds = _FOLDS.get(c.lower(), "")
        if data.draw(st.integers(0, 3)) == 0:
            chars[i] = data.draw(st.sampled_from(["é", "日本", "\u2028", "ß", c, *folds]))
    text = "".join(chars)
    for rule in RULES:
        if rule.kind in _START_WORDS:
            fast = [m.span() for m in _matches(rule.pattern, rule.kind, text)]
            assert fast == [m.span() for m in rule.pattern.finditer(text)]


@pytest.mark.parametrize(
    "word", ["\u017fecret", "\u212aey", "pa\u017f\u017fword", "credent\u0131al", "to\u212aen"]
)
def test_a_word_spelled_with_a_folding_letter_is_matched_like_finditer(word: str) -> None:
    text = f"café {word}=Zx9Qm4Lp7Rt2Vw8Ks3Nd6Hj1 日本"
    rule = next(r for r in RULES if r.kind == "high-entropy-secret")
    fast = [m.span() for m in _matches(rule.pattern, rule.kind, text)]
    assert fast == [m.span() for m in rule.pattern.finditer(text)] != []


@pytest.mark.parametrize("engine", ["hyperscan", "re"])
@pytest.mark.parametrize(
    "word", ["\u017fecret", "\u212aey", "pa\u017f\u017fword", "credent\u0131al", "to\u212aen"]
)
def test_a_key_after_a_word_spelled_with_a_folding_letter_is_redacted(
    word: str, engine: str
) -> None:
    # The probe pass is caseless for ASCII only: it must not keep the rules from seeing the
    # words their `(?i)` matches.
    key = "Zx9Qm4Lp7Rt2Vw8Ks3Nd6Hj1"
    used = secret_scan.engine()
    try:
        secret_scan.use_engine(engine)
        redacted = redact.redact_text(f"café {word}={key} 日本")
    finally:
        secret_scan.use_engine(used)
    assert key not in redacted and redacted.startswith(f"café {word}=[REDACTED:")
