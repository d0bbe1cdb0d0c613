"""The rule table and decoded-form matching, in process: every planted kind in every form, and
ordinary code and prose that must stay as it is."""

from __future__ import annotations

import base64
import json

import pytest
from planted_secrets import PLANTED, base64_wrapped, fingerprint, json_escaped, url_encoded

from indexer.redact.decoded import decode_base64, unescape
from indexer.redact.rules import KINDS, RULES
from indexer.redact.scan import find_secrets, probe
from indexer.redact.text import redact_detail, redact_text

_IDS = [f"{p.kind}-{n % 3 + 1}" for n, p in enumerate(PLANTED)]


def test_rule_table_has_at_least_100_kinds() -> None:
    assert len(KINDS) >= 100
    assert all(rule.probes for rule in RULES)


def test_every_rule_finds_a_planted_sample() -> None:
    """Each rule is exercised by the planted set on its own (not only through an earlier,
    wider rule that redacts the same value first)."""
    found = set()
    for p in PLANTED:
        found |= {kind for _s, _e, kind in find_secrets(p.context.format(s=p.secret))}
    assert found == set(KINDS)


@pytest.mark.parametrize("planted", PLANTED, ids=_IDS)
def test_every_probe_fires_on_the_raw_json_of_its_samples(planted: object) -> None:
    """The probe pass runs on a tool call's raw JSON too (before any decoding): a rule that
    matches a text must have its probe fire on that text as a JSON string, escaped or not."""
    _, secret, context, _ = planted  # type: ignore[misc]
    text = context.format(s=secret)
    kinds = {kind for _s, _e, kind in find_secrets(text)}
    for raw in (json.dumps(text).encode(), json.dumps(text, ensure_ascii=False).encode()):
        hits = {RULES[i].kind for i in probe(raw)[0] if i < len(RULES)}
        assert kinds <= hits, (raw, kinds - hits)


@pytest.mark.parametrize("planted", PLANTED, ids=_IDS)
@pytest.mark.parametrize("form", ["plain", "json-escaped", "url-encoded", "base64"])
def test_every_kind_in_every_form(planted: object, form: str) -> None:
    _, secret, context, _ = planted  # type: ignore[misc]
    text = context.format(s=secret)
    shown = {
        "plain": text,
        "json-escaped": json_escaped(text, secret),
        "url-encoded": url_encoded(text, secret),
        "base64": f"echo {base64_wrapped(text)} | base64 -d",
    }[form]
    out = redact_text(shown)
    assert "[REDACTED:" in out
    assert fingerprint(secret) not in out
    if form == "base64":
        assert base64_wrapped(text) not in out


NEGATIVE = [
    "def get_token(self) -> str:\n    return self._token",
    "PWD=/home/user/project",
    "the --password flag asks for it interactively",
    "mysql -u root -p app < dump.sql",
    'sshpass -p "$SSH_PASS" ssh host',
    "curl -H 'Authorization: Bearer ${TOKEN}' https://api.example.com",
    "export API_KEY=$(cat ~/.config/key)",
    "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39\nAuthor: Dev <dev@example.com>",
    "id 0f6a6c8e-1b2d-4c3e-9f40-5a6b7c8d9e01 and /home/dev/app/src/components/LoginForm.tsx",
    "SPEECH_KEY = get_env('SPEECH_KEY')",
    "password: required",
    "The task asks the desk clerk about the skeleton key.",
    "import { createClient } from '@supabase/supabase-js'",
    "https://docs.python.org/3/library/base64.html",
    "ghp_ is the prefix of a GitHub token; AKIA starts an AWS key id",
]


@pytest.mark.parametrize("text", NEGATIVE)
def test_ordinary_text_stays(text: str) -> None:
    assert redact_text(text) is text


def test_unescape_decodes_json_url_and_hex_escapes() -> None:
    assert unescape(r"sk\u002dant\u002d %41KIA \x41 https:\/\/h") == "sk-ant- AKIA A https://h"
    assert unescape("%2541") == "A"  # encoded twice


def test_decode_base64_rejects_binary_and_accepts_clipped_text() -> None:
    assert decode_base64(base64.b64encode(bytes(range(40))).decode()) is None
    blob = base64.b64encode(b"AccountKey=" + b"x" * 60).decode()
    assert (decode_base64(blob[:-3]) or "").startswith("AccountKey=")  # cut mid-group


def test_detail_members_and_escapes_are_redacted() -> None:
    token = "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    raw = ('{"input":{"command":"echo ' + token.replace("_", "\\u005f") + '"},'
           '"env":{"DB_PASSWORD":"Zq81mXv0pLr2"}}').encode()
    out = redact_detail(raw)
    assert token[5:].encode() not in out and b"Zq81mXv0pLr2" not in out
    assert redact_detail(b'{"input":{"command":"ls -la"}}') == b'{"input":{"command":"ls -la"}}'
