"""redact_text/redact_detail in process: span merging, base64 nesting, lone surrogates, JSON output."""

from __future__ import annotations

import base64
import json
import uuid

import msgspec
import pytest

from indexer.models import Entry
from indexer.redact.text import _apply_spans, redact_detail, redact_entry, redact_text

KEY = "AKIAZ7QWERTY4UIOP2XC"
TAG = "[REDACTED:aws-access-key]"
B64_TAG = "[REDACTED:base64-secret]"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# --- _apply_spans: literal expectations ---------------------------------------------------


def test_spans_apply_in_order_with_text_kept_between() -> None:
    text = "0123456789abcdef"
    out = _apply_spans(text, [(10, 12, "b"), (2, 4, "a")])
    assert out == "01[REDACTED:a]456789[REDACTED:b]cdef"


def test_span_at_the_very_start() -> None:
    assert _apply_spans("secretrest", [(0, 6, "k")]) == "[REDACTED:k]rest"


def test_same_start_keeps_the_longest_span() -> None:
    assert _apply_spans("abcdefghij", [(0, 3, "short"), (0, 8, "long")]) == "[REDACTED:long]ij"


def test_adjacent_spans_both_apply() -> None:
    assert _apply_spans("aaabbbccc", [(0, 3, "x"), (3, 6, "y")]) == "[REDACTED:x][REDACTED:y]ccc"


def test_overlap_then_a_later_span() -> None:
    out = _apply_spans("0123456789abcdef", [(0, 5, "a"), (3, 8, "b"), (12, 14, "c")])
    assert out == "[REDACTED:a]89ab[REDACTED:c]ef"


def test_redact_text_with_text_around_a_key() -> None:
    assert redact_text(f"before {KEY} after") == f"before {TAG} after"


# --- non-ASCII and lone surrogates ------------------------------------------------------------


def test_key_right_after_a_non_ascii_letter() -> None:
    assert redact_text(f"clé={KEY}") == f"clé={TAG}"
    assert redact_text(f"é {KEY} ü") == f"é {TAG} ü"


def test_lone_surrogate_next_to_a_key_is_kept_and_the_key_redacted() -> None:
    assert redact_text(f"\ud800 {KEY}") == f"\ud800 {TAG}"
    assert redact_text(f"\udfff password={KEY}") != f"\udfff password={KEY}"


def test_lone_surrogate_in_an_entry_field() -> None:
    entry = Entry(
        file_id=1,
        offset=0,
        line_no=1,
        ts_ns=1,
        pid=1,
        session_id="s",
        hook_event="h",
        event="e",
        text=f"\ud83d {KEY}",
    )
    out = redact_entry(entry)
    assert out.text == f"\ud83d {TAG}"


def test_base64_blob_next_to_a_lone_surrogate() -> None:
    blob = _b64(f"export AWS_ACCESS_KEY_ID={KEY} && deploy --region eu-west-1 now")
    assert redact_text(f"\ud800 data {blob} end") == f"\ud800 data {B64_TAG} end"


# --- base64 nesting ------------------------------------------------------------------------------


def test_key_in_base64_is_redacted_whole() -> None:
    blob = _b64(f"export AWS_ACCESS_KEY_ID={KEY} && deploy --region eu-west-1 now")
    assert redact_text(f"payload {blob} end") == f"payload {B64_TAG} end"


def test_key_in_base64_inside_base64_is_redacted() -> None:
    inner = _b64(f"export AWS_ACCESS_KEY_ID={KEY} && deploy --region eu-west-1 now")
    outer = _b64(f"the config blob is {inner} as sent by the deploy job")
    assert redact_text(f"payload {outer} end") == f"payload {B64_TAG} end"


def test_harmless_base64_is_kept() -> None:
    blob = _b64("a perfectly harmless sentence about the weather, long enough to decode.")
    text = f"payload {blob} end"
    assert redact_text(text) is text
    inner = _b64("another perfectly harmless sentence about the weather, long enough.")
    outer = _b64(f"the blob is {inner} and nothing else of note is in it at all")
    text2 = f"payload {outer} end"
    assert redact_text(text2) is text2


def _entry(**fields: object) -> Entry:
    base: dict[str, object] = {
        "file_id": 1,
        "offset": 0,
        "line_no": 1,
        "ts_ns": 1,
        "pid": 1,
        "session_id": "s",
        "hook_event": "PreToolUse",
        "event": "tool_call",
    }
    base.update(fields)
    return Entry(**base)  # type: ignore[arg-type]


def test_entry_with_a_key_in_nested_base64_is_redacted() -> None:
    inner = _b64(f"export AWS_ACCESS_KEY_ID={KEY} && deploy --region eu-west-1 now")
    outer = _b64(f"the config blob is {inner} as sent by the deploy job")
    out = redact_entry(_entry(text=f"payload {outer} end"))
    assert out.text == f"payload {B64_TAG} end"
    out1 = redact_entry(_entry(cwd=f"dir {inner}"))
    assert out1.cwd == f"dir {B64_TAG}"


def test_entry_whose_whole_field_is_a_key() -> None:
    out = redact_entry(_entry(description=KEY, instruction=KEY, text=KEY))
    assert (out.description, out.instruction, out.text) == (TAG, TAG, TAG)
    out2 = redact_entry(_entry(description=KEY, files=(KEY,)))
    assert (out2.description, out2.files) == (TAG, (TAG,))
    out3 = redact_entry(_entry(cwd=KEY, detail=msgspec.Raw(b"[]")))
    assert out3.cwd == TAG


# --- redact_detail: the JSON written back -------------------------------------------------------


def test_detail_is_rewritten_compact_and_utf8() -> None:
    raw = json.dumps({"a": f"x {KEY}", "b": "é"}, ensure_ascii=False).encode()
    assert redact_detail(raw) == f'{{"a":"x {TAG}","b":"é"}}'.encode()


def test_detail_with_a_lone_surrogate_stays_escaped() -> None:
    raw = b'{"a": "\\ud800 ' + KEY.encode() + b'"}'
    assert redact_detail(raw) == b'{"a":"\\ud800 ' + TAG.encode() + b'"}'


def test_detail_lists_are_redacted_item_by_item() -> None:
    raw = json.dumps({"l": ["ok", f"k {KEY}", 3, ["deep", KEY]]}).encode()
    assert json.loads(redact_detail(raw)) == {"l": ["ok", f"k {TAG}", 3, ["deep", TAG]]}


def test_clean_detail_is_returned_as_is() -> None:
    raw = b'{"l": ["ok", 3, {"m": ["a b"]}], "n": null}'
    assert redact_detail(raw) is raw
    raw2 = b'["one", "two", [1, 2]]'
    assert redact_detail(raw2) is raw2


def test_detail_with_a_key_only_in_a_dict_key() -> None:
    raw = json.dumps({KEY: 1, "x": [1]}).encode()
    assert json.loads(redact_detail(raw)) == {TAG: 1, "x": [1]}


def test_raw_rules_see_non_ascii_text_as_is() -> None:
    # A value rule stops at a backslash: on `\u00e9` escapes it would cut the value short.
    assert redact_text("password=hunter2ésecret rest") == "password=[REDACTED:secret] rest"
    assert redact_text('api_key="sk-éabc"') == 'api_key="[REDACTED:secret]"'


def test_base64_secret_inside_a_detail_list() -> None:
    blob = _b64(f"export AWS_ACCESS_KEY_ID={KEY} && deploy --region eu-west-1 now")
    raw = json.dumps({"l": ["ok", f"payload {blob} end"]}).encode()
    assert json.loads(redact_detail(raw)) == {"l": ["ok", f"payload {B64_TAG} end"]}


def test_detail_with_a_lone_surrogate_and_several_members() -> None:
    raw = b'{"a": "\\udc80 ' + KEY.encode() + b'", "b": [1, 2]}'
    assert redact_detail(raw) == b'{"a":"\\udc80 ' + TAG.encode() + b'","b":[1,2]}'


def test_base64_decoding_stops_after_two_levels() -> None:
    # The decoding depth is bounded (the cost of a probe stays linear): a blob whose only
    # rule-like word sits three base64 layers deep is not decoded that far, so it is kept.
    # Two layers deep, the same word makes the blob go whole.
    deepest = "AKIA is only a prefix here, in a long enough harmless sentence."
    one = _b64(deepest)
    two = _b64(f"level two holds {one} and some more harmless words")
    three = _b64(f"level three holds {two} and yet more harmless words")
    text3 = f"payload {three} end"
    assert redact_text(text3) is text3
    assert redact_text(f"payload {two} end") == f"payload {B64_TAG} end"
    entry = _entry(text=text3)
    assert redact_entry(entry) is entry


def test_a_plain_key_before_a_base64_secret_both_go() -> None:
    # The plain key's tag is longer than the key: the blob's place is found in the text as
    # redacted, not where it stood before.
    blob = _b64(f"export AWS_ACCESS_KEY_ID={KEY} && deploy --region eu-west-1 now")
    assert redact_text(f"{KEY} payload {blob} end") == f"{TAG} payload {B64_TAG} end"
    assert redact_text(f"k={KEY} and {blob}") == f"k={TAG} and {B64_TAG}"


def test_a_member_name_never_seen_before_is_redacted() -> None:
    # Names are unique to this run, so no earlier event can have left their result behind.
    fresh = uuid.uuid4().hex
    raw = json.dumps({f"{KEY}_{fresh}": 1, f"plain_{fresh}": 2}).encode()
    expected = {f"{TAG}_{fresh}": 1, f"plain_{fresh}": 2}
    assert json.loads(redact_detail(raw)) == expected
    # and the same names again give the same result
    assert json.loads(redact_detail(raw)) == expected


@pytest.mark.parametrize(
    "before",
    ["/tmp/", "x=", "==", "/", "key=", "/home/user/projects/app/", "/a/b/c/d/e/f/g/h/i/j/"],
)
def test_a_base64_secret_glued_to_a_path_or_an_equals_sign_is_redacted(before: str) -> None:
    # `/` and `=` are base64 characters: the blob was read from the wrong first character
    # (after a path) or not found at all (after `=`), and the key it hides was kept.
    key = "AKIA" + "Q7XW2ZK5JH3MN4PB"
    blob = base64.b64encode(f"aws_access_key_id={key}".encode()).decode()
    out = redact_text(before + blob)
    assert blob not in out and "[REDACTED:" in out


def test_a_plain_path_is_not_taken_for_base64() -> None:
    path = "/home/user/projects/app/src/components/VeryLongComponentNameHere.tsx"
    assert redact_text(path) == path
