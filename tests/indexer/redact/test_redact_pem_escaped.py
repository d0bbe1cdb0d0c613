"""A private key cut off before its END line, inside JSON shown as text, is still redacted."""

from __future__ import annotations

import json

import pytest

from indexer.redact.text import redact_text

_HEADER = "-----BEGIN OPENSSH " + "PRIVATE KEY-----"
_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"


@pytest.mark.parametrize("newline", ["\\n", "\\r\\n", "\\n\\n", "\n"])
def test_truncated_key_in_json_text_is_redacted(newline: str) -> None:
    # A tool printing a JSON file (`cat key.json`): the key's newlines are `\n` escapes.
    text = '{"k": "' + _HEADER + newline + _BODY + '"}'
    out = redact_text(text)
    assert _BODY not in out and "[REDACTED:private-key]" in out
    assert out.startswith('{"k": "')


def test_truncated_key_in_a_json_value_is_redacted() -> None:
    text = json.dumps({"config": {"key": _HEADER + "\n" + _BODY}})
    assert _BODY not in redact_text(text)
