"""The secret rule table: provider token shapes, credential contexts and a keyword prefilter."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import NamedTuple

from indexer.redact.passwords import CONTEXT_RULES, SHELL_VALUE, probe_on_raw_json

# Kinds follow the rule sets of gitleaks and detect-secrets (which kinds exist, and their
# published token shapes); the patterns are written here. Each rule runs only when one of its
# keywords occurs (case-insensitively) in the text: the keywords are what the one multi-pattern
# prefilter pass looks for, the full patterns run on the few texts that hold one.
# Group "s", when present, is the secret: the context around it (a flag, a key name) stays.

# A token starts here (not glued to a word; after `_` it may, as in `key_AKIA…`) and ends here.
_B = r"(?<![A-Za-z0-9])"
_E = r"(?![A-Za-z0-9])"


class Rule(NamedTuple):
    kind: str
    pattern: re.Pattern[str]
    probes: tuple[str, ...]  # regexes (usually literals) matched caselessly on the raw bytes
    check: Callable[[str], bool] | None = None


def _has_digit(value: str) -> bool:
    """Random keys of 20+ characters always hold a digit; words and identifiers often do not."""
    return any(c.isdigit() for c in value)


def _mixed_key(value: str) -> bool:
    """A random key of letters and digits: both cases and a digit (`s.` plus a word is not)."""
    return _has_digit(value) and not value.islower() and not value.isupper()


def shannon_entropy(value: str) -> float:
    """Bits per character of value's own character distribution."""
    if not value:
        return 0.0
    counts: dict[str, int] = {}
    for c in value:
        counts[c] = counts.get(c, 0) + 1
    n = len(value)
    return -sum(k / n * math.log2(k / n) for k in counts.values())


_PLACEHOLDER = re.compile(
    r"(?i)^(?:\$.*|x+|\*+|\.+|<[^>]*>|\$\{?[A-Za-z_][\w.]*\}?|\{\{.*\}\}|%\(.*\)s|your[_-].*|"
    r"(?:example|sample|dummy|placeholder|changeme_please|redacted|none|null|true|false)"
    r"(?:[_-].*)?)$"
)


def is_placeholder(value: str) -> bool:
    """A template or a mask, not a secret: `<token>`, `${TOKEN}`, `xxxx`, `your_api_key`."""
    return _PLACEHOLDER.match(value) is not None or value.startswith("[REDACTED")


def _random_enough(value: str) -> bool:
    """The false-positive guard of the entropy rule (detect-secrets' limits, a little stricter):
    a long value with letters and digits, high entropy, and no placeholder or path shape."""
    if is_placeholder(value) or value.count("/") > 2:  # a path, not a key
        return False
    if not (_has_digit(value) and any(c.isalpha() for c in value)):
        return False
    limit = 3.0 if re.fullmatch(r"[0-9a-fA-F]+", value) else 3.5
    return shannon_entropy(value) >= limit


def _env_value(value: str) -> bool:
    """A value assigned in a .env file: not a template, not a flag (`AUTH=1`, `TOKEN=true`)."""
    return len(value) >= 4 and not is_placeholder(value)


def _r(
    kind: str,
    pattern: str,
    *keywords: str,
    probe: str = "",
    check: Callable[[str], bool] | None = None,
) -> Rule:
    probes = (probe,) if probe else tuple(re.escape(k.lower()) for k in keywords)
    return Rule(kind, re.compile(pattern), probes, check)


RULES: tuple[Rule, ...] = (
    # --- cloud -------------------------------------------------------------------------------
    _r("aws-access-key", _B + r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}" + _E,
       "akia", "asia", "abia", "acca", "a3t"),
    _r("aws-secret-key", r"(?i)aws.{0,20}?(?:secret|sk).{0,20}?['\"=:\s]\s*['\"]?(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
       "aws"),
    _r("gcp-api-key", _B + r"AIza[0-9A-Za-z_-]{35}" + r"(?![0-9A-Za-z_-])", "aiza"),
    _r("gcp-service-account-key", r"\"private_key_id\"\s*:\s*\"(?P<s>[0-9a-f]{40})\"", "private_key_id"),
    _r("google-oauth-token", _B + r"ya29\.[0-9A-Za-z_-]{20,}", "ya29."),
    _r("google-oauth-secret", _B + r"GOCSPX-[A-Za-z0-9_-]{28}", "gocspx-"),
    _r("azure-storage-key", r"(?i)AccountKey=(?P<s>[A-Za-z0-9+/]{40,}={0,2})", "accountkey="),
    _r("azure-sas-signature", r"[?&;\s]sig=(?P<s>[A-Za-z0-9%+/]{20,}(?:=|%3D){0,2})", "sig="),
    _r("azure-ad-client-secret", _B + r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}" + r"(?![A-Za-z0-9_~-])", "q~"),
    _r("digitalocean-token", _B + r"do[opr]_v1_[a-f0-9]{64}" + _E, "do_v1_", "dop_v1_", "dor_v1_", "doo_v1_"),
    _r("heroku-api-key", _B + r"HRKU-[0-9A-Za-z_-]{60}", "hrku-"),
    _r("alibaba-access-key", _B + r"LTAI[A-Za-z0-9]{20}" + _E, "ltai"),
    _r("tencent-secret-id", _B + r"AKID[A-Za-z0-9]{32}" + _E, "akid"),
    _r("cloudflare-origin-ca-key", _B + r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}", "v1.0-"),
    _r("flyio-token", _B + r"fo1_[\w-]{43}", "fo1_"),
    # A service token names its environment: dp.st.<config>.<key>.
    _r("doppler-token", _B + r"dp\.(?:pt|st|ct|sa|scim|audit)\.(?:[a-z0-9_-]{1,40}\.)?[A-Za-z0-9]{40,44}" + _E,
       "dp.pt.", "dp.st.", "dp.ct.", "dp.sa.", "dp.scim.", "dp.audit."),
    _r("vault-token", _B + r"hv[sb]\.[A-Za-z0-9_-]{90,}", "hvs.", "hvb."),
    # Before Vault 1.10: s.<24 characters> (service), b.AAAAAQ… (batch).
    _r("vault-token", _B + r"(?:s\.[A-Za-z0-9]{24}|b\.AAAAAQ[A-Za-z0-9_-]{80,})" + _E,
       probe=r"s\.[a-z0-9]{24}(?:[^a-z0-9]|$)|b\.aaaaaq", check=_mixed_key),
    _r("terraform-cloud-token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}", "atlasv1"),
    _r("pulumi-token", _B + r"pul-[a-f0-9]{40}" + _E, "pul-"),
    _r("databricks-token", _B + r"dapi[a-f0-9]{32}(?:-\d)?" + _E, "dapi"),
    _r("planetscale-token", _B + r"pscale_(?:tkn|oauth|pw)_[A-Za-z0-9=._-]{32,64}", "pscale_"),
    _r("grafana-token", _B + r"(?:glc_[A-Za-z0-9+/]{32,400}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})", "glc_", "glsa_"),
    _r("newrelic-key", _B + r"NR(?:AK|AA|II)-[A-Za-z0-9]{27}", "nrak-", "nraa-", "nrii-"),
    _r("sentry-token", _B + r"(?:sntrys_eyJ[A-Za-z0-9+/=_-]{20,}|sntryu_[a-f0-9]{64})", "sntrys_", "sntryu_"),
    _r("supabase-token", _B + r"sbp_[a-f0-9]{40}" + _E, "sbp_"),
    _r("onepassword-token", _B + r"ops_eyJ[A-Za-z0-9+/=_-]{100,}", "ops_eyj"),
    _r("age-secret-key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", "age-secret-key-"),
    # --- version control -----------------------------------------------------------------------
    _r("github-token", _B + r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    _r("gitlab-token", _B + r"gl(?:pat|ptt|dt|rt|soat|cbt|imt|ft|oas)-[0-9A-Za-z_-]{20,}", "glpat-", "glptt-", "gldt-", "glrt-", "glsoat-", "glcbt-", "glimt-", "glft-", "gloas-"),
    _r("bitbucket-app-password", _B + r"ATBB[A-Za-z0-9_=.-]{28,}", "atbb"),
    _r("atlassian-token", _B + r"ATATT3[A-Za-z0-9_=-]{100,}", "atatt3"),
    # --- package registries --------------------------------------------------------------------
    _r("npm-token", _B + r"npm_[A-Za-z0-9]{36}" + _E, "npm_"),
    _r("npmrc-auth", r"(?i)_auth(?:Token)?\s*=\s*(?P<s>[^\s\"']{8,})", "_auth"),
    _r("pypi-token", _B + r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}", "pypi-ageichlwas5vcmc"),
    _r("pypi-token-test", _B + r"pypi-AgENdGVzdC5weXBpLm9yZw[A-Za-z0-9_-]{50,}", "pypi-agendgvzdc5wexbplm9yzw"),
    _r("rubygems-key", _B + r"rubygems_[a-f0-9]{48}" + _E, "rubygems_"),
    _r("nuget-key", _B + r"oy2[a-z0-9]{43}" + _E, probe=r"oy2[a-z0-9]{43}"),
    _r("dockerhub-token", _B + r"dckr_pat_[A-Za-z0-9_-]{27,}", "dckr_pat_"),
    _r("artifactory-key", _B + r"AKCp[A-Za-z0-9]{69}" + _E, "akcp"),
    _r("cratesio-token", _B + r"cio[A-Za-z0-9]{32}" + _E, probe=r"cio[a-z0-9]{32}", check=_has_digit),
    _r("clojars-token", _B + r"CLOJARS_[a-z0-9]{60}" + _E, "clojars_"),
    # --- chat and collaboration ------------------------------------------------------------------
    _r("slack-token", _B + r"xox[abposr]-[0-9A-Za-z-]{10,}", "xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-"),
    _r("slack-app-token", _B + r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+", "xapp-"),
    _r("slack-webhook", r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]+", "hooks.slack.com"),
    _r("telegram-bot-token", r"(?:(?<=bot)|(?<![A-Za-z0-9_]))\d{8,10}:AA[0-9A-Za-z_-]{33}" + r"(?![0-9A-Za-z_-])", probe=r"[0-9]{8,10}:aa"),
    _r("discord-bot-token", _B + r"[MNO][A-Za-z\d_-]{23,25}\.[A-Za-z\d_-]{6}\.[A-Za-z\d_-]{27,38}" + r"(?![A-Za-z\d_-])",
       probe=r"[mno][a-z0-9_-]{23,25}\.[a-z0-9_-]{6}\."),
    _r("discord-webhook", r"discord(?:app)?\.com/api/webhooks/\d+/(?P<s>[A-Za-z0-9_-]{60,})", "discord"),
    _r("teams-webhook", r"webhook\.office\.com/webhookb2/(?P<s>[^\s\"'<>]+)", "webhook.office.com"),
    _r("linear-api-key", _B + r"lin_api_[A-Za-z0-9]{40}" + _E, "lin_api_"),
    _r("notion-token", _B + r"(?:ntn_\d{11}[A-Za-z0-9]{35}|secret_[A-Za-z0-9]{43})" + _E, "ntn_", "secret_", check=_has_digit),
    _r("postman-key", _B + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", "pmak-"),
    # --- payment and commerce --------------------------------------------------------------------
    _r("stripe-key", _B + r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{10,}|" + _B + r"pk_live_[0-9A-Za-z]{10,}", "_live_", "_test_"),
    _r("stripe-webhook-secret", _B + r"whsec_[A-Za-z0-9]{32,}", "whsec_"),
    _r("square-token", _B + r"(?:sq0atp-[0-9A-Za-z_-]{22}|sq0csp-[0-9A-Za-z_-]{43}|EAAA[0-9A-Za-z_-]{60})", "sq0atp-", "sq0csp-", probe=r"sq0atp-|sq0csp-|eaaa[0-9a-z_-]{60}"),
    _r("braintree-token", r"access_token\$production\$[0-9a-z]{16}\$[0-9a-f]{32}", "access_token$"),
    _r("shopify-token", _B + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _E, "shpat_", "shpca_", "shppa_", "shpss_"),
    _r("flutterwave-key", _B + r"FLW(?:SEC|PUB)K(?:_TEST)?-[a-h0-9]{32}-X", "flwseck", "flwpubk"),
    _r("razorpay-key", _B + r"rzp_(?:live|test)_[A-Za-z0-9]{14}" + _E, "rzp_"),
    _r("shippo-token", _B + r"shippo_(?:live|test)_[a-f0-9]{40}" + _E, "shippo_"),
    _r("easypost-key", _B + r"EZ[AT]K[a-z0-9]{54}" + _E, "ezak", "eztk"),
    # --- email and messaging ------------------------------------------------------------------
    _r("sendgrid-key", _B + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", "sg."),
    _r("mailgun-key", _B + r"key-[0-9a-f]{32}" + _E, "key-"),
    _r("mailchimp-key", _B + r"[0-9a-f]{32}-us\d{1,2}" + _E, probe=r"[0-9a-f]{32}-us[0-9]"),
    _r("brevo-key", _B + r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}", "xkeysib-"),
    _r("twilio-api-key", _B + r"SK[0-9a-fA-F]{32}" + _E, probe=r"sk[0-9a-f]{32}", check=_has_digit),
    _r("postmark-token", r"(?i)X-Postmark-(?:Server|Account)-Token:\s*(?P<s>[0-9a-f-]{36})", "postmark"),
    # --- AI providers -------------------------------------------------------------------------
    _r("anthropic-key", _B + r"sk-ant-[A-Za-z0-9_-]{20,}", "sk-ant-"),
    _r("openai-key", _B + r"sk-(?!ant-)[A-Za-z0-9_-]{20,}", "sk-", check=_has_digit),
    _r("huggingface-token", _B + r"(?:hf_[A-Za-z0-9]{30,}|api_org_[A-Za-z0-9]{34})" + _E, "hf_", "api_org_"),
    _r("groq-key", _B + r"gsk_[A-Za-z0-9]{48,}" + _E, "gsk_"),
    _r("replicate-token", _B + r"r8_[A-Za-z0-9]{37}" + _E, "r8_"),
    _r("perplexity-key", _B + r"pplx-[A-Za-z0-9]{48}" + _E, "pplx-"),
    _r("xai-key", _B + r"xai-[A-Za-z0-9]{70,}" + _E, "xai-"),
    # --- structured secrets -------------------------------------------------------------------
    _r("jwt", _B + r"eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*", "eyj"),
    # After the header, newlines may be `\n` escapes (a JSON file shown as text).
    _r("private-key", r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:\s|\\[nrt])*(?:[\w-]+: [^\n]*\s*)*[A-Za-z0-9+/=]{16,}[\s\S]*?(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|(?=[\"'`]|\Z))", "private key"),
    _r("putty-private-key", r"PuTTY-User-Key-File-\d: [\s\S]*?Private-MAC: [0-9a-f]+", "putty-user-key-file"),
    _r("url-credentials", r"[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@\"'<>]*:(?P<s>[^\s:/@\"'<>${][^\s/@\"'<>]*)@", "://"),
    _r("dsn-password", r"(?i)(?:^|[;\s\"'])(?:Password|Pwd)\s*=\s*(?P<s>[^;\"'\s{$/~][^;\"'\s]{2,})(?=;|\s|$|[\"'])", "password=", "pwd="),
    # --- HTTP headers --------------------------------------------------------------------------
    _r("authorization-header", r"(?i)\bAuthorization\s*[:=]\s*[\"']?(?:Bearer|Basic|Token|Bot|Digest|Negotiate)\s+(?P<s>[A-Za-z0-9._~+/=:-]{8,})", "authorization"),
    _r("bearer-token", r"(?i)\bBearer\s+(?P<s>[A-Za-z0-9._~+/=-]{20,})", "bearer", check=_has_digit),
    _r("api-key-header", r"(?i)\bX-(?:Api|Auth)-(?:Key|Token)\s*:\s*(?P<s>[^\s\"']{8,})", "-key", "-token"),
    # --- passwords by their context: command flags, credential files, cookies, prose ------
    *(Rule(r.kind, re.compile(r.pattern), (probe_on_raw_json(r.probe),), r.check) for r in CONTEXT_RULES),
    # --- .env assignments and the entropy rule ------------------------------------------------
    _r("env-assignment",
       r"(?m)^[ \t]*(?:export[ \t]+)?[A-Za-z_][A-Za-z0-9_]*(?:SECRET|TOKEN|PASSWORD|PASSWD|PASS|PWD|API_?KEY|PRIVATE_?KEY|ACCESS_?KEY|AUTH|CREDENTIALS?|_KEY)[ \t]*=[ \t]*" + SHELL_VALUE + r"(?![\w(\[.])",
       "secret", "token", "pass", "pwd", "key", "auth", "credential", check=_env_value),
    _r("high-entropy-secret",
       r"(?i)(?:key|token|secret|passw(?:or)?d|auth|credential|signature|salt)[\w.-]{0,20}[\"']?\s*(?::=|=>|[:=])\s*[\"']?(?P<s>[A-Za-z0-9+/_=.~-]{16,200})(?![A-Za-z0-9+/_=.~-])",
       "key", "token", "secret", "passwd", "password", "auth", "credential", "signature", "salt",
       check=_random_enough),
)

# Narrower probes for the context rules, whose keywords alone ("key", "token") are in most
# code: the probe runs on raw JSON too, so whitespace may be an escape (`\n`) and a quote
# may be escaped (`\"`).
_W = r"(?:\s|\\[nrt])"
_Q = r"(?:\\?[\"'])"
_PROBES = {
    "aws-secret-key": r"aws.{0,20}(?:secret|sk).{0,24}[a-z0-9/+]{40}",
    "npmrc-auth": rf"_auth(?:token)?{_W}*=",
    "mailgun-key": r"key-[0-9a-f]{32}",
    "openai-key": r"sk-[a-z0-9_-]{20}",
    "url-credentials": r"://[^\s:/@\"'<>]*:[^\s/@\"'<>]+@",
    "dsn-password": rf"(?:password|pwd){_W}*={_W}*[^;\"'\s{{$/~]",
    "authorization-header": rf"authorization{_W}*[:=]",
    "bearer-token": rf"bearer{_W}+[a-z0-9._~+/=-]{{20}}",
    "api-key-header": rf"x-(?:api|auth)-(?:key|token){_W}*:",
    "env-assignment": (
        r"(?:secret|token|passwd|pass|pwd|api_?key|private_?key|access_?key|auth|credentials?|_key)"
        r"[ \t]*=[ \t]*\S{4}"
    ),
    "high-entropy-secret": (
        r"(?:key|token|secret|passw(?:or)?d|auth|credential|signature|salt)[\w.-]{0,20}"
        rf"{_Q}?{_W}*(?::=|=>|[:=]){_W}*{_Q}?[a-z0-9+/_=.~-]{{16}}"
    ),
}
RULES = tuple(r._replace(probes=(_PROBES[r.kind],)) if r.kind in _PROBES else r for r in RULES)
KINDS = tuple(sorted({r.kind for r in RULES}))
