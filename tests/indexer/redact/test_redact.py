"""Tests for indexer.redact.text: one row per secret kind, negatives, JSON safety, properties."""

from __future__ import annotations

import json
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexer.redact.raw import may_contain_secret, redact_bytes
from indexer.redact.text import redact_text

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GH_TOKEN = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"
GH_PAT = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
ANTHROPIC = "sk-ant-api03-" + "Xy9_abcDEF-123ghiJKL456mnoPQR789stuVWX012yz"
OPENAI = "sk-proj-" + "Ab3De5Gh7Jk9Mn1Pq3St5Vx7Za9Ce1Gi3Km5Oq7"
OPENAI_LEGACY = "sk-" + "T3BlbkFJ" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0"
GOOGLE = "AIza" + "SyA1bC2dE3fG4hI5jK6lM7nO8pQ9rS0tU1v"
STRIPE = "sk_live_" + "51HqLyjA2bC3dE4fG5hI6jK7lM8nO9p"
SLACK = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
SLACK_HOOK_PATH = "hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM_BODY = "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi\nZ1BvWD4Q2kdGb5t8cX7RZhwzzjC0TQxkBAEUvcC\nq8w=="
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"


def hook_line(content: str, *, tool: str = "Read") -> bytes:
    """A spool line as the hook writes it: envelope + a compact PostToolUse payload."""
    event = {
        "session_id": "7f0c2a4e-5b1d-4c3e-9a8f-0123456789ab",
        "transcript_path": "/home/u/.claude/projects/-work/7f0c2a4e.jsonl",
        "cwd": "/work/main",
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": {"file_path": "/work/main/.env"},
        "tool_response": {"type": "text", "file": {"content": content}},
        "tool_use_id": "toolu_01ABCDEFGHIJKLMNOPQRSTUV",
    }
    envelope = {"ctxd": 1, "ts_ns": 1755009022123456789, "pid": 4242, "event": event}
    return json.dumps(envelope, separators=(",", ":")).encode()


def content_of(line: bytes) -> str:
    value: str = json.loads(line)["event"]["tool_response"]["file"]["content"]
    return value


# One row per kind (and per form): the text, and exactly what it must become.
POSITIVE = [
    ("aws-access-key", f"AWS_KEY={AWS_KEY}\n", "AWS_KEY=[REDACTED:aws-access-key]\n"),
    ("aws-access-key-sts", "key ASIAY34FZKBOKMUTVV7A here", "key [REDACTED:aws-access-key] here"),
    (
        "aws-secret-key",
        f"aws_secret_access_key = {AWS_SECRET}",
        "aws_secret_access_key = [REDACTED:aws-secret-key]",
    ),
    (
        "github-token",
        f"git push https://x {GH_TOKEN}",
        "git push https://x [REDACTED:github-token]",
    ),
    ("github-pat", f"GH={GH_PAT};", "GH=[REDACTED:github-token];"),
    ("anthropic-key", f"key {ANTHROPIC} end", "key [REDACTED:anthropic-key] end"),
    (
        "anthropic-env",
        f"ANTHROPIC_API_KEY={ANTHROPIC}",
        "ANTHROPIC_API_KEY=[REDACTED:anthropic-key]",
    ),
    ("openai-project", f"use {OPENAI}", "use [REDACTED:openai-key]"),
    (
        "openai-legacy",
        f"OPENAI_API_KEY={OPENAI_LEGACY}\n",
        "OPENAI_API_KEY=[REDACTED:openai-key]\n",
    ),
    ("google-api-key", f"maps?key={GOOGLE}&x=1", "maps?key=[REDACTED:google-api-key]&x=1"),
    ("stripe-secret", f"stripe.api_key = '{STRIPE}'", "stripe.api_key = '[REDACTED:stripe-key]'"),
    ("stripe-restricted", "rk_live_abcdefghijKLMNOP0123", "[REDACTED:stripe-key]"),
    ("stripe-test", "sk_test_4eC39HqLyjWDarjtT1zdp7dc", "[REDACTED:stripe-key]"),
    ("stripe-publishable-live", "pk_live_abcdefghij0123456789", "[REDACTED:stripe-key]"),
    ("slack-token", f"token {SLACK} x", "token [REDACTED:slack-token] x"),
    (
        "slack-webhook",
        f"curl https://{SLACK_HOOK_PATH} -d @m",
        "curl https://[REDACTED:slack-webhook] -d @m",
    ),
    ("jwt", f"Authorization: Bearer {JWT}", "Authorization: Bearer [REDACTED:jwt]"),
    ("private-key", f"key:\n{PEM}\nrest", "key:\n[REDACTED:private-key]\nrest"),
    (
        "private-key-openssh",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----",
        "[REDACTED:private-key]",
    ),
    ("private-key-truncated", f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}", "[REDACTED:private-key]"),
    (
        "env-password",
        "DB_PASSWORD=hunter2\nDB_HOST=db",
        "DB_PASSWORD=[REDACTED:secret]\nDB_HOST=db",
    ),
    ("passwd", "passwd: s3cr3tpass", "passwd: [REDACTED:secret]"),
    ("pwd", "PWD=hunter22", "PWD=[REDACTED:secret]"),
    ("passphrase-stops-at-space", "passphrase=correct horse", "passphrase=[REDACTED:secret] horse"),
    (
        "colon-word-then-newline",
        "password: letmein\nuser: bob",
        "password: [REDACTED:secret]\nuser: bob",
    ),
    ("colon-non-word", "token: s3cr3t and more", "token: [REDACTED:secret] and more"),
    ("secret", "SECRET: abcdef123", "SECRET: [REDACTED:secret]"),
    ("client-secret", "client_secret=abc123xyz&grant=x", "client_secret=[REDACTED:secret]&grant=x"),
    (
        "access-token-dotted-literal",
        "access_token=ya29.a0AfH6SMBx",
        "access_token=[REDACTED:secret]",
    ),
    (
        "auth-token-env",
        "export ANTHROPIC_AUTH_TOKEN=tok_9f8e7d6c",
        "export ANTHROPIC_AUTH_TOKEN=[REDACTED:secret]",
    ),
    ("api-key-header", "-H 'x-api-key: abcd1234efgh'", "-H 'x-api-key: [REDACTED:secret]'"),
    ("apikey-yaml", "apikey: 'abcd1234'", "apikey: '[REDACTED:secret]'"),
    ("python-literal", 'password = "hunter2"', 'password = "[REDACTED:secret]"'),
    ("python-annotated", 'token: str = "abc"', 'token: str = "[REDACTED:secret]"'),
    (
        "json-in-text",
        '{"password": "p@ss w0rd", "user": "bob"}',
        '{"password": "[REDACTED:secret]", "user": "bob"}',
    ),
    ("python-dict", "{'api_key': 'abcd1234'}", "{'api_key': '[REDACTED:secret]'}"),
    (
        "url-credentials",
        "postgres://admin:s3cr3t@db:5432/app",
        "postgres://admin:[REDACTED:url-credentials]@db:5432/app",
    ),
    (
        "private",
        "before <private>my home address</private> after",
        "before [REDACTED:private] after",
    ),
    ("private-case-multiline", 'a <PRIVATE>line1\nline "2"</Private> b', "a [REDACTED:private] b"),
    ("private-attr", 'x <private reason="pii">555-1234</private>', "x [REDACTED:private]"),
    (
        "private-two-spans",
        "<private>a</private> keep <private>b</private>",
        "[REDACTED:private] keep [REDACTED:private]",
    ),
    ("after-escape-newline", f"line\n{AWS_KEY}", "line\n[REDACTED:aws-access-key]"),
    ("after-non-ascii", f"é{AWS_KEY}", "é[REDACTED:aws-access-key]"),
]

NEGATIVE = [
    ("prose-token", "the token budget is 2000 tokens"),
    ("secretary", "secretary: Jane Doe"),
    ("tokens-call", "tokens = encode(x)"),
    ("field-name", "password_field = form.get('password')"),
    ("environ", "token = os.environ['GITHUB_TOKEN']"),
    ("process-env", "api_key = process.env.OPENAI_API_KEY"),
    ("getenv", 'api_key = os.getenv("OPENAI_API_KEY")'),
    ("annotation-none", "password: Optional[str] = None"),
    ("await", "const token = await getToken()"),
    ("short-value", "token=abc"),
    ("pwd-dir", "PWD=/home/user/project"),
    ("shell-ref", "password: ${{ secrets.DB_PASSWORD }}"),
    ("url-ref", "postgres://user:${DB_PASS}@db/app"),
    ("comparison", 'if password == "x": pass'),
    ("max-tokens", "max_tokens: 4096 and token_count = 12"),
    ("no-digit-sk", "sk-learn-is-a-great-library-name-here"),
    ("glued-sk", "task-0123456789abcdefghijklmnop"),
    ("aws-too-long", "AKIAIOSFODNN7EXAMPLEX"),
    ("ssh-remote", "git@github.com:anthropics/claude-code.git"),
    ("plain-url", "see https://docs.python.org/3/library/re.html"),
    ("unclosed-private", "the <private> tag hides text"),
    ("closing-only", "mentions </private> and <private"),
    (
        "public-key",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n-----END PUBLIC KEY-----",
    ),
    ("pem-header-in-code", 'if line == "-----BEGIN RSA PRIVATE KEY-----": start()'),
    ("placeholder", "password: required"),
    ("prose-after-colon", "Session token: Random UUID stored in a cookie"),
    ("env-name-reference", "createClient({ url: DATABASE_URL, authToken: DATABASE_AUTH_TOKEN })"),
    ("js-method", "return { getToken: async (key) => cache.get(key) }"),
    ("mask", 'apiKey: "...", password: "****"'),
    ("closing-quote-then-space", 'grep -q "^DATABASE_AUTH_TOKEN=" .env.local'),
    ("redacted-already", "password=[REDACTED:secret]"),
]


@pytest.mark.parametrize(
    ("text", "expected"), [r[1:] for r in POSITIVE], ids=[r[0] for r in POSITIVE]
)
def test_positive_in_hook_payload(text: str, expected: str) -> None:
    line = hook_line(text)
    assert may_contain_secret(line)  # the prefilter never hides a secret from the rules
    out = redact_bytes(line)
    assert content_of(out) == expected
    # Only the secret changed: the rest of the payload is byte-identical.
    assert out.startswith(line[: line.index(b'"content":')])
    assert redact_bytes(out) == out  # idempotent


@pytest.mark.parametrize(
    ("text", "expected"), [r[1:] for r in POSITIVE], ids=[r[0] for r in POSITIVE]
)
def test_positive_redact_text(text: str, expected: str) -> None:
    assert redact_text(text) == expected


@pytest.mark.parametrize("text", [r[1] for r in NEGATIVE], ids=[r[0] for r in NEGATIVE])
def test_negative_unchanged(text: str) -> None:
    line = hook_line(text)
    assert redact_bytes(line) == line
    assert redact_text(text) == text


def test_clean_line_is_returned_as_is() -> None:
    line = hook_line("def main() -> None:\n    print('hello, world')\n" * 20)
    assert not may_contain_secret(line)
    assert redact_bytes(line) is line
    text = "nothing to see here"
    assert redact_text(text) is text


def test_realistic_env_read() -> None:
    line = hook_line(
        "# local settings\nDB_PASSWORD=hunter2\nAWS_KEY=" + AWS_KEY + "\n"
        f"aws_secret_access_key={AWS_SECRET}\nOPENAI_API_KEY={OPENAI}\nDEBUG=true\n"
    )
    assert content_of(redact_bytes(line)) == (
        "# local settings\nDB_PASSWORD=[REDACTED:secret]\nAWS_KEY=[REDACTED:aws-access-key]\n"
        "aws_secret_access_key=[REDACTED:aws-secret-key]\nOPENAI_API_KEY=[REDACTED:openai-key]\n"
        "DEBUG=true\n"
    )


def test_realistic_payloads_keep_structure() -> None:
    bash = {
        "session_id": "s1",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {
            "command": f"export GITHUB_TOKEN={GH_TOKEN} && gh pr list",
            "description": "List PRs",
        },
    }
    prompt = {
        "session_id": "s1",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "Deploy it. <private>The staging password is Tr0ub4dor&3</private> Thanks!",
    }
    web = {
        "session_id": "s1",
        "hook_event_name": "PostToolUse",
        "tool_name": "WebFetch",
        "tool_response": {
            "result": {
                "token": "abcd1234efgh",
                "expires_in": 3600,
                "password": 12345678,
                "client_secret": "cs_9f8e7d6c5b4a",
            }
        },
    }
    got = [
        json.loads(redact_bytes(json.dumps(p, separators=(",", ":")).encode()))
        for p in (bash, prompt, web)
    ]
    assert got[0]["tool_input"] == {
        "command": "export GITHUB_TOKEN=[REDACTED:github-token] && gh pr list",
        "description": "List PRs",
    }
    assert got[1]["prompt"] == "Deploy it. [REDACTED:private] Thanks!"
    # JSON members lose their string values; a number stays a number (replacing it would
    # break the JSON) and is not a credential format anyway.
    assert got[2]["tool_response"]["result"] == {
        "token": "[REDACTED:secret]",
        "expires_in": 3600,
        "password": 12345678,
        "client_secret": "[REDACTED:secret]",
    }


def test_private_tags_never_cross_strings() -> None:
    obj = {"a<private>b": "c</private>d", "e": "<private>f", "g": "h</private>"}
    line = json.dumps(obj).encode()
    assert redact_bytes(line) == line
    # An escaped quote inside the span is part of the string, so the span still closes.
    obj2 = {"x": 'say <private>"hi"</private> ok', "y": "</private>"}
    assert json.loads(redact_bytes(json.dumps(obj2).encode())) == {
        "x": "say [REDACTED:private] ok",
        "y": "</private>",
    }


def test_escape_letters_are_not_token_starts() -> None:
    # "\r" + "k_live_…": a carriage return, then text; redacting from the "r" would leave "\[".
    text = "\rk_live_abcdefghijklmnop"
    line = json.dumps({"x": text}).encode()
    assert redact_bytes(line) == line
    # An escaped backslash before "rk_live_" is a real backslash: the key is redacted.
    line = json.dumps({"x": "C:\\rk_live_abcdefghijklmnop"}).encode()
    assert json.loads(redact_bytes(line)) == {"x": "C:\\[REDACTED:stripe-key]"}


def test_unicode_escaped_json() -> None:
    # ensure_ascii output: "é" is "\u00e9", which must still count as a token boundary.
    line = json.dumps({"x": f"é{AWS_KEY}"}, ensure_ascii=True).encode()
    assert json.loads(redact_bytes(line)) == {"x": "é[REDACTED:aws-access-key]"}


def test_large_line_linear() -> None:
    # MB-sized lines with many candidates must stay fast (the suite's timeout catches a blow-up).
    chunk = "password=hunter22 <private>x</private> token key= sk-abc " + "a" * 200
    text = chunk * 5000
    out = json.loads(redact_bytes(json.dumps({"x": text}).encode()))["x"]
    assert "hunter22" not in out and "<private>" not in out
    unclosed = "<private> " * 20000 + "-----BEGIN RSA PRIVATE KEY----- " * 2000
    line = json.dumps({"x": unclosed}).encode()
    assert redact_bytes(line) == line


# --- properties --------------------------------------------------------------------------

_B64 = string.ascii_letters + string.digits
_TOKEN_CHARS = _B64 + "_-"


def _rand(alphabet: str, n: int) -> st.SearchStrategy[str]:
    # A fixed marker leads every random part: hypothesis's filler text may repeat drawn values
    # (twelve zeros, say), but it never produces the marker, so "gone" checks stay exact.
    return st.text(alphabet=alphabet, min_size=n - 5, max_size=n - 5).map(lambda s: "QX7ZR" + s)


SECRETS: st.SearchStrategy[tuple[str, str]] = st.one_of(  # (text to plant, what must vanish)
    _rand(string.ascii_uppercase + string.digits, 16).map(lambda s: ("AKIA" + s,) * 2),
    _rand(_B64, 36).map(lambda s: ("ghp_" + s,) * 2),
    _rand(_TOKEN_CHARS, 30).map(lambda s: ("sk-ant-api03-" + s,) * 2),
    _rand(_TOKEN_CHARS, 40).map(lambda s: ("sk-proj-" + s,) * 2),
    _rand(_TOKEN_CHARS, 35).map(lambda s: ("AIza" + s,) * 2),
    _rand(_B64, 24).map(lambda s: ("sk_live_" + s,) * 2),
    _rand(_B64, 24).map(lambda s: ("xoxp-" + s,) * 2),
    _rand(_B64, 24).map(
        lambda s: ("https://" + SLACK_HOOK_PATH[:-24] + s, SLACK_HOOK_PATH[:-24] + s)
    ),
    st.tuples(_rand(_TOKEN_CHARS, 20), _rand(_TOKEN_CHARS, 30)).map(
        lambda t: ("eyJhbGciOi" + t[0] + ".eyJzdWIi" + t[1] + ".sig", "eyJzdWIi" + t[1])
    ),
    _rand(_B64, 40).map(
        lambda s: (f"-----BEGIN EC PRIVATE KEY-----\n{s}\n-----END EC PRIVATE KEY-----", s)
    ),
    _rand(_B64, 12).map(lambda s: (f"DB_PASSWORD={s}", s)),
    _rand(_B64, 12).map(lambda s: (f'"client_secret": "{s}"', s)),
    _rand(_B64, 12).map(lambda s: (f"mysql://root:{s}@localhost/db", s)),
    st.tuples(
        st.sampled_from(["private", "PRIVATE", "Private"]), _rand(_B64, 12), st.text(max_size=30)
    ).map(lambda t: (f"<{t[0]}>{t[1]}{t[2]}</{t[0]}>", t[1])),
)


@st.composite
def planted_text(draw: st.DrawFn) -> tuple[str, list[str]]:
    parts: list[str] = []
    gone: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        secret, vanish = draw(SECRETS)
        parts += [draw(st.text(max_size=40)), " ", secret, " "]
        gone.append(vanish)
    parts.append(draw(st.text(max_size=40)))
    return "".join(parts), gone


def _all_strings(obj: Any) -> str:
    if isinstance(obj, dict):
        return "\x00".join(k + "\x00" + _all_strings(v) for k, v in obj.items())
    if isinstance(obj, list):
        return "\x00".join(_all_strings(v) for v in obj)
    return obj if isinstance(obj, str) else ""


JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=30)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(
    planted=st.lists(planted_text(), min_size=1, max_size=3),
    filler=st.dictionaries(st.text(max_size=12), JSON_SCALARS, max_size=4),
    split_tag=st.tuples(st.text(max_size=10), st.text(max_size=10)),
    ensure_ascii=st.booleans(),
)
def test_property_json_stays_valid_and_secrets_vanish(
    planted: list[tuple[str, list[str]]],
    filler: dict[str, Any],
    split_tag: tuple[str, str],
    ensure_ascii: bool,
) -> None:
    obj: dict[str, Any] = dict(filler)
    obj["nested"] = {"list": [text for text, _ in planted], "n": 1}
    obj[planted[0][0]] = planted[-1][0]  # a secret in a key, too
    obj[split_tag[0] + "<private>" + split_tag[1]] = split_tag[1] + "</private>" + split_tag[0]
    line = json.dumps(obj, ensure_ascii=ensure_ascii, separators=(",", ":")).encode()
    out = redact_bytes(line)
    decoded = json.loads(out)  # valid JSON, whatever was replaced
    remaining = _all_strings(decoded)
    for _, gone in planted:
        for secret in gone:
            assert secret not in remaining
    assert redact_bytes(out) == out  # idempotent


@given(st.text(max_size=200))
def test_property_arbitrary_text(text: str) -> None:
    line = json.dumps({"t": text, text: [text]}).encode()
    out = redact_bytes(line)
    json.loads(out)
    if not may_contain_secret(line):
        assert out is line
    assert isinstance(redact_text(text), str)


@given(
    st.lists(
        st.sampled_from(
            [
                "password",
                "=",
                ":",
                " ",
                '"',
                "\\",
                "'",
                "<private>",
                "</private>",
                "sk-",
                "AKIA",
                "key",
                "api_",
                "token",
                "x9",
                "-----BEGIN ",
                "PRIVATE KEY-----",
                "\n",
                "é",
                "$",
                "(",
                ".",
            ]
        ),
        max_size=40,
    ).map("".join)
)
def test_property_adversarial_fragments(text: str) -> None:
    for ensure_ascii in (False, True):
        line = json.dumps({"k": text, text: text}, ensure_ascii=ensure_ascii).encode()
        json.loads(redact_bytes(line))
