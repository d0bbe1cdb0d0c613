"""The probe's gates for the earlier rules: every line they edit is seen, common words are not."""

from __future__ import annotations

import json

import pytest

from indexer.redact.raw import redact_bytes
from indexer.redact.scan import LEGACY, probe
from indexer.redact.text import redact_text

# One text per handler of the earlier rules, each one they redact (built from parts so that
# no scanner flags this file).
_KEY = "a1B2c3D4e5F6g7H8i9J0k1L2"
REDACTED_BY_EARLIER_RULES = [
    "AK" + "IAQWERTYUIOPASDFGH",
    "AI" + "za" + "SyA1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q",
    "gh" + "p_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github" + "_pat_" + _KEY + "_x",
    "ey" + "JhbGciOiJIUzI1NiJ9.ey" + "JzdWIiOiIxIn0.abc",
    "xo" + "xb-1234567890-abcdefghij",
    "postgres://me:" + "hunter2secret@db.example.org/x",
    "api_key" + " = " + _KEY,
    "API-KEY" + ": " + _KEY,
    "apikey" + "=" + _KEY,
    "access_key" + "=" + _KEY,
    "aws_secret_access_key" + " = " + _KEY,
    "secret_key" + '": "' + _KEY + '"',
    "auth_token" + "=" + _KEY,
    "Token" + ": '" + _KEY + "'",
    "sk-" + "ant-api03-" + _KEY,
    "sk-" + _KEY,
    "sk" + "_live_" + _KEY,
    "line\nsk-" + _KEY,
    "caf\u00e9sk-" + _KEY,
    "rk" + "_test_" + _KEY,
    "pk" + "_live_" + _KEY,
    "https://hooks.slack.com/services/" + "T000/B000/XXXXXXXX",
    "DB_PASSWORD" + "=" + _KEY,
    "passwd" + ": " + _KEY,
    "passphrase" + "='" + _KEY + "'",
    "pwd" + "=" + _KEY,
    "keep <private>" + "my diary</private> out",
    "<PRIVATE note=1>" + "x</private>",
    "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEAx1y2z3\n-----END RSA PRIVATE KEY-----",
    "-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA",
    "client_secret" + "=" + _KEY,
    "SECRET" + ": " + _KEY,
]


@pytest.mark.parametrize("text", REDACTED_BY_EARLIER_RULES)
def test_probe_sees_every_text_the_earlier_rules_edit(text: str) -> None:
    encoded = json.dumps(text, ensure_ascii=False).encode()
    assert redact_bytes(encoded) != encoded  # the case really is one the rules edit
    for form in (text, f"say {text} now", json.dumps({"k": text})):
        encoded = json.dumps(form, ensure_ascii=False).encode()
        if redact_bytes(encoded) != encoded:
            assert LEGACY in probe(form.encode())[0], form
            assert redact_text(form) != form


@pytest.mark.parametrize("escape", ["\\n", "\\t", "\\u00e9", " "])
def test_probe_sees_a_key_after_an_escape_in_raw_json(escape: str) -> None:
    # A raw detail is probed as it is stored: `\nsk-…` has a letter before the key.
    raw = ('{"a":"x' + escape + "sk-" + _KEY + '"}').encode()
    assert redact_bytes(raw) != raw
    assert LEGACY in probe(raw)[0]


# Words the earlier gates used to stop on although their rules could never edit them there:
# a hyphenated word after a `k`, a key name ending in `Key`/`ken`, and `private` in code.
COMMON = [
    "the work-completion agent reduces back-and-forth",
    "titleKey: 'case1', monkey = 3, broken: yes",
    "private readonly store: Store; class Private {}",
    "hook.com/services/ HOOKS.SLACK.COM/SERVICES/x Sk-abc Ak_live_ ayJ",
    "secretary: Ann",
    "<task-notification><task-id>b1</task-id> View Task-103, desk_live_ ask_test_",
]


@pytest.mark.parametrize("text", COMMON)
def test_probe_passes_common_words_the_earlier_rules_never_edit(text: str) -> None:
    encoded = json.dumps(text, ensure_ascii=False).encode()
    assert redact_bytes(encoded) == encoded
    assert LEGACY not in probe(text.encode())[0]
