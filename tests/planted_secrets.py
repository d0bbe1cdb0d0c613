"""Planted secrets: one realistic value per provider kind, its contexts, and its encoded forms.

Each value is fake but has the exact shape of the provider's token. A value's fingerprint is a
run of letters and digits long enough to be unique; a leak of the value in any stored or
printed form that keeps it readable shows the fingerprint.
"""

from __future__ import annotations

import base64
import random
import re
import string
from typing import NamedTuple

_rng = random.Random(9)


def _pick(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


_AN = string.ascii_letters + string.digits
_LOWER_AN = string.ascii_lowercase + string.digits
_UPPER_AN = string.ascii_uppercase + string.digits
_HEXL = "0123456789abcdef"
_B64 = _AN + "+/"


def _an(n: int) -> str:
    """Random letters and digits that contain at least one digit and both cases."""
    while True:
        s = _pick(_AN, n)
        if any(c.isdigit() for c in s) and not s.islower() and not s.isupper():
            return s


class Planted(NamedTuple):
    kind: str
    secret: str  # the value that must never be stored or printed outside the spool
    context: str  # where it stands, `{s}` marks the value


def _p(kind: str, secret: str, context: str = "value {s} here") -> Planted:
    return Planted(kind, secret, context)


PLANTED: tuple[Planted, ...] = (
    # the kinds that leaked before (plain, escaped or wrapped)
    _p("anthropic", "sk-ant-api03-" + _an(80) + "-" + _an(6) + "AA", "export ANTHROPIC_API_KEY={s}"),
    _p("aws-access-key", "AKIA" + _pick(_UPPER_AN, 16), "aws configure set aws_access_key_id {s}"),
    _p("url-credentials-pw", "Pw" + _an(14), "git clone https://ci:{s}@git.example.com/repo.git"),
    _p("npm", "npm_" + _an(36), "//registry.npmjs.org/:_authToken={s}"),
    _p("pypi", "pypi-AgEIcHlwaS5vcmc" + _an(60), "twine upload -p {s} dist/*"),
    _p("huggingface", "hf_" + _an(34), "huggingface-cli login --token {s}"),
    _p("gitlab", "glpat-" + _an(20), "curl --header 'PRIVATE-TOKEN: {s}' https://gitlab.com/api/v4/projects"),
    _p("twilio", "SK" + _pick(_HEXL, 31) + "7", "twilio api key sid {s}"),
    _p("sendgrid", "SG." + _an(22) + "." + _an(43), "SENDGRID_KEY {s}"),
    _p("digitalocean", "dop_v1_" + _pick(_HEXL, 64), "doctl auth init -t {s}"),
    _p("telegram", "7312345678:AA" + _an(33), "curl https://api.telegram.org/bot{s}/getMe"),
    _p("azure-account-key", _an(86) + "==", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={s};EndpointSuffix=core.windows.net"),
    _p("azure-sas", _an(43) + "%3D", "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2026-01-01&sp=r&sig={s}"),
    _p("auth-bearer", _an(40), "curl -H 'Authorization: Bearer {s}' https://api.example.com"),
    _p("auth-basic", base64.b64encode(("admin:" + _an(14)).encode()).decode(), "Authorization: Basic {s}"),
    _p("mysql-p", "My" + _an(12), "mysql -u root -p{s} -h db.internal app"),
    _p("sshpass", "Ss" + _an(12), 'sshpass -p "{s}" ssh deploy@10.0.0.5'),
    # cloud
    _p("aws-secret-key", _pick(_B64, 18) + "7" + _an(21), "aws_secret_access_key = {s}"),
    _p("gcp-api-key", "AIza" + _an(35), "const firebase = {{ apiKey: '{s}' }}"),
    _p("google-oauth", "ya29." + _an(60), "token {s}"),
    _p("google-client-secret", "GOCSPX-" + _an(28), "client secret {s}"),
    _p("azure-ad", _an(3) + "8Q~" + _an(34), "AZURE_CLIENT_SECRET {s}"),
    _p("heroku", "HRKU-" + _an(60), "heroku token {s}"),
    _p("alibaba", "LTAI" + _an(20), "aliyun key {s}"),
    _p("tencent", "AKID" + _an(32), "tencent id {s}"),
    _p("flyio", "fo1_" + _an(43), "fly token {s}"),
    _p("doppler", "dp.pt." + _an(43), "doppler {s}"),
    _p("vault", "hvs." + _an(95), "VAULT_TOKEN {s}"),
    _p("terraform", _an(14) + ".atlasv1." + _an(65), "terraform {s}"),
    _p("pulumi", "pul-" + _pick(_HEXL, 40), "pulumi login {s}"),
    _p("databricks", "dapi" + _pick(_HEXL, 32), "databricks {s}"),
    _p("planetscale", "pscale_tkn_" + _an(43), "pscale {s}"),
    _p("grafana", "glsa_" + _an(32) + "_" + _pick(_HEXL, 8), "grafana {s}"),
    _p("newrelic", "NRAK-" + _pick(_UPPER_AN, 26) + "7", "newrelic {s}"),
    _p("sentry", "sntryu_" + _pick(_HEXL, 64), "sentry {s}"),
    _p("supabase", "sbp_" + _pick(_HEXL, 40), "supabase {s}"),
    _p("age", "AGE-SECRET-KEY-1" + _pick("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58), "age key {s}"),
    # version control and registries
    _p("github-pat", "ghp_" + _an(36), "git push https://x-access-token:{s}@github.com/o/r"),
    _p("github-fine", "github_pat_" + _an(22) + "_" + _an(59), "GH {s}"),
    _p("bitbucket", "ATBB" + _an(32), "bitbucket {s}"),
    _p("rubygems", "rubygems_" + _pick(_HEXL, 48), "gem {s}"),
    _p("dockerhub", "dckr_pat_" + _an(27), "docker hub {s}"),
    _p("clojars", "CLOJARS_" + _pick(_LOWER_AN, 60), "clojars {s}"),
    # chat
    _p("slack-bot", "xoxb-" + _pick(string.digits, 12) + "-" + _pick(string.digits, 13) + "-" + _an(24), "SLACK {s}"),
    _p("slack-webhook", "T0" + _pick(_UPPER_AN, 8) + "/B0" + _pick(_UPPER_AN, 8) + "/" + _an(24), "https://hooks.slack.com/services/{s}"),
    _p("discord-webhook", _an(68), "https://discord.com/api/webhooks/123456789012345678/{s}"),
    _p("linear", "lin_api_" + _an(40), "linear {s}"),
    _p("notion", "ntn_" + _pick(string.digits, 11) + _an(35), "notion {s}"),
    _p("postman", "PMAK-" + _pick(_HEXL, 24) + "-" + _pick(_HEXL, 34), "postman {s}"),
    # payment
    _p("stripe", "sk_live_" + _an(40), "stripe {s}"),
    _p("stripe-webhook", "whsec_" + _an(32), "webhook {s}"),
    _p("square", "sq0csp-" + _an(43), "square {s}"),
    _p("shopify", "shpat_" + _pick(_HEXL, 32), "shopify {s}"),
    _p("razorpay", "rzp_live_" + _an(14), "razorpay {s}"),
    # email
    _p("mailgun", "key-" + _pick(_HEXL, 32), "mailgun {s}"),
    _p("mailchimp", _pick(_HEXL, 32) + "-us14", "mailchimp {s}"),
    _p("brevo", "xkeysib-" + _pick(_HEXL, 64) + "-" + _an(16), "brevo {s}"),
    # AI providers
    _p("openai", "sk-proj-" + _an(48), "OPENAI {s}"),
    _p("groq", "gsk_" + _an(52), "groq {s}"),
    _p("replicate", "r8_" + _an(37), "replicate {s}"),
    _p("perplexity", "pplx-" + _an(48), "pplx {s}"),
    # structured
    _p("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI" + _an(30) + "." + _an(43), "cookie session={s}"),
    _p("private-key", "MIIEpAIBAAKCAQEA" + _an(64), "-----BEGIN RSA PRIVATE KEY-----\n{s}\n" + _an(64) + "\n-----END RSA PRIVATE KEY-----"),
    _p("postgres-url", "Pg" + _an(16), "DATABASE_URL=postgres://app:{s}@db.internal:5432/app"),
    _p("mongodb-url", "Mg" + _an(16), "mongodb+srv://root:{s}@cluster0.mongodb.net/test"),
    _p("dsn", "Ds" + _an(14), "Server=tcp:db.example.com;Database=app;User Id=sa;Password={s};"),
    _p("x-api-key", _an(32), "curl -H 'X-Api-Key: {s}' https://api.example.com"),
    # command lines and .env
    _p("password-flag", "Pf" + _an(14), "psql --password={s} -h db"),
    _p("pgpassword", "Pq" + _an(14), "PGPASSWORD={s} psql -h db -U app"),
    _p("redis-cli", "Rd" + _an(14), "redis-cli -h cache -a {s} ping"),
    _p("docker-login", "Dk" + _an(14), "docker login -u me -p {s} registry.example.com"),
    _p("curl-user", "Cu" + _an(14), "curl -u admin:{s} https://jenkins.example.com"),
    _p("env-secret", "Ev" + _an(20), "STRIPE_WEBHOOK_SECRET={s}"),
    _p("env-password", "Ep" + _an(12), "DB_PASSWORD={s}"),
    _p("json-password", "Jp" + _an(12), '{{"username": "admin", "password": "{s}"}}'),
    _p("entropy", _an(32), "signing_key: {s}"),
)

_RUN = re.compile(r"[A-Za-z0-9]{10,}")


def fingerprint(secret: str) -> str:
    """The longest letters-and-digits run of the value, at most 16 characters from its end."""
    run = max(_RUN.findall(secret), key=len)
    return run[-16:]


def json_escaped(text: str, secret: str) -> str:
    """text with the secret written with `\\u00XX` escapes for its first character and every
    character that is not a letter or digit, as a JSON document inside the text holds it."""
    escaped = "".join(
        c if c.isalnum() and i else f"\\u{ord(c):04x}" for i, c in enumerate(secret)
    )
    return text.replace(secret, escaped)


def url_encoded(text: str, secret: str) -> str:
    """text with the secret percent-encoded where a URL would (and its first character)."""
    encoded = "".join(c if c.isalnum() and i else f"%{ord(c):02X}" for i, c in enumerate(secret))
    return text.replace(secret, encoded)


def base64_wrapped(text: str) -> str:
    """text base64-encoded, as in `echo … | base64 -d`, a Kubernetes secret or a Basic header."""
    return base64.b64encode(text.encode()).decode()
