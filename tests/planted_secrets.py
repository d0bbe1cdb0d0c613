"""Planted secrets: three realistic values per kind, each in its own context, and their encoded forms.

Each value is fake but has the exact shape of the provider's token, or, for a password, the
context a real one stands in (a flag, a credential file, a sentence). A value's fingerprint is
a run of letters and digits long enough to be unique; a leak of the value in any stored or
printed form that keeps it readable shows the fingerprint. A password's fingerprint is the run
after its symbol, so a rule that stops at the symbol leaks it.
"""

from __future__ import annotations

import base64
import random
import re
import string
from collections.abc import Callable
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


def _pw() -> str:
    """A password as people make them: letters, digits and one symbol inside."""
    return _an(8) + _rng.choice("!#+.^_~*") + _an(14)


class Planted(NamedTuple):
    kind: str
    secret: str  # the value that must never be stored or printed outside the spool
    context: str  # where it stands, `{s}` marks the value
    needs_context: bool = False  # recognisable only by its context (not alone, as a file name)


# Where a token of a known shape also turns up: pasted alone, or in a sentence.
_ANYWHERE = ("{s}", "copied {s} from the dashboard")


def _kind(
    kind: str, make: Callable[[], str], *contexts: str, needs_context: bool = False
) -> tuple[Planted, ...]:
    """Three values of one kind, each in the next of its contexts."""
    if not needs_context:
        contexts = (*contexts, *_ANYWHERE)
    return tuple(Planted(kind, make(), contexts[i], needs_context) for i in range(3))


def _ctx(kind: str, *contexts: str, make: Callable[[], str] = _pw) -> tuple[Planted, ...]:
    """A password (or a token) that only its three contexts make recognisable."""
    assert len(contexts) == 3, kind
    return _kind(kind, make, *contexts, needs_context=True)


_PEM = "-----BEGIN {t}PRIVATE KEY-----\n{{s}}\n" + "{body}\n-----END {t}PRIVATE KEY-----"

PLANTED: tuple[Planted, ...] = (
    # --- provider token shapes ------------------------------------------------------------
    *_kind("anthropic", lambda: "sk-ant-api03-" + _an(80) + "-" + _an(6) + "AA", "export ANTHROPIC_API_KEY={s}"),
    *_kind("aws-access-key", lambda: "AKIA" + _pick(_UPPER_AN, 16), "aws configure set aws_access_key_id {s}"),
    *_kind("npm", lambda: "npm_" + _an(36), "//registry.npmjs.org/:_authToken={s}"),
    *_kind("pypi", lambda: "pypi-AgEIcHlwaS5vcmc" + _an(60), "twine upload -p {s} dist/*"),
    *_kind("pypi-test", lambda: "pypi-AgENdGVzdC5weXBpLm9yZw" + _an(60), "twine upload -r testpypi -p {s} dist/*"),
    *_kind("huggingface", lambda: "hf_" + _an(34), "huggingface-cli login --token {s}"),
    *_kind("gitlab", lambda: "glpat-" + _an(20), "curl --header 'PRIVATE-TOKEN: {s}' https://gitlab.com/api/v4/projects"),
    *_kind("twilio", lambda: "SK" + _pick(_HEXL, 31) + "7", "twilio api key sid {s}"),
    *_kind("sendgrid", lambda: "SG." + _an(22) + "." + _an(43), "SENDGRID_KEY {s}"),
    *_kind("digitalocean", lambda: "dop_v1_" + _pick(_HEXL, 64), "doctl auth init -t {s}"),
    *_kind("telegram", lambda: "7312345678:AA" + _an(33), "curl https://api.telegram.org/bot{s}/getMe"),
    *_kind("gcp-api-key", lambda: "AIza" + _an(35), "const firebase = {{ apiKey: '{s}' }}"),
    *_kind("google-oauth", lambda: "ya29." + _an(60), "token {s}"),
    *_kind("google-client-secret", lambda: "GOCSPX-" + _an(28), "client secret {s}"),
    *_kind("azure-ad", lambda: _an(3) + "8Q~" + _an(34), "AZURE_CLIENT_SECRET {s}"),
    *_kind("heroku", lambda: "HRKU-" + _an(60), "heroku token {s}"),
    *_kind("alibaba", lambda: "LTAI" + _an(20), "aliyun key {s}"),
    *_kind("tencent", lambda: "AKID" + _an(32), "tencent id {s}"),
    *_kind("flyio", lambda: "fo1_" + _an(43), "fly token {s}"),
    *_kind("doppler", lambda: "dp.pt." + _an(43), "doppler {s}"),
    *_kind("doppler-service", lambda: "dp.st.prd." + _an(40), "doppler run --config prd -- env # {s}"),
    *_kind("vault", lambda: "hvs." + _an(95), "VAULT_TOKEN {s}"),
    *_kind("vault-legacy", lambda: "s." + _an(24), "vault login {s}"),
    *_kind("terraform", lambda: _an(14) + ".atlasv1." + _an(65), "terraform {s}"),
    *_kind("pulumi", lambda: "pul-" + _pick(_HEXL, 40), "pulumi login {s}"),
    *_kind("databricks", lambda: "dapi" + _pick(_HEXL, 32), "databricks {s}"),
    *_kind("planetscale", lambda: "pscale_tkn_" + _an(43), "pscale {s}"),
    *_kind("grafana", lambda: "glsa_" + _an(32) + "_" + _pick(_HEXL, 8), "grafana {s}"),
    *_kind("newrelic", lambda: "NRAK-" + _pick(_UPPER_AN, 26) + "7", "newrelic {s}"),
    *_kind("sentry", lambda: "sntryu_" + _pick(_HEXL, 64), "sentry {s}"),
    *_kind("supabase", lambda: "sbp_" + _pick(_HEXL, 40), "supabase {s}"),
    *_kind("age", lambda: "AGE-SECRET-KEY-1" + _pick("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58), "age key {s}"),
    *_kind("cloudflare-origin-ca", lambda: "v1.0-" + _pick(_HEXL, 24) + "-" + _pick(_HEXL, 146), "CF_ORIGIN {s}"),
    *_kind("onepassword", lambda: "ops_eyJ" + _an(120), "op service account {s}"),
    *_kind("github-pat", lambda: "ghp_" + _an(36), "git push https://x-access-token:{s}@github.com/o/r"),
    *_kind("github-fine", lambda: "github_pat_" + _an(22) + "_" + _an(59), "GH {s}"),
    *_kind("bitbucket", lambda: "ATBB" + _an(32), "bitbucket {s}"),
    *_kind("atlassian", lambda: "ATATT3" + _an(180), "jira api {s}"),
    *_kind("rubygems", lambda: "rubygems_" + _pick(_HEXL, 48), "gem {s}"),
    *_kind("dockerhub", lambda: "dckr_pat_" + _an(27), "docker hub {s}"),
    *_kind("clojars", lambda: "CLOJARS_" + _pick(_LOWER_AN, 60), "clojars {s}"),
    *_kind("artifactory", lambda: "AKCp" + _an(69), "artifactory {s}"),
    *_kind("nuget", lambda: "oy2" + _pick(_LOWER_AN, 43), "dotnet nuget push pkg.nupkg -k {s}"),
    *_kind("cratesio", lambda: "cio" + _an(32), "cargo login {s}"),
    *_kind("slack-bot", lambda: "xoxb-" + _pick(string.digits, 12) + "-" + _pick(string.digits, 13) + "-" + _an(24), "SLACK {s}"),
    *_kind("slack-app", lambda: "xapp-1-A0" + _pick(_UPPER_AN, 9) + "-" + _pick(string.digits, 13) + "-" + _pick(_LOWER_AN, 64), "socket mode {s}"),
    *_kind("discord-bot", lambda: "MT" + _an(24) + "." + _an(6) + "." + _an(38), "client.login('{s}')"),
    *_kind("linear", lambda: "lin_api_" + _an(40), "linear {s}"),
    *_kind("notion", lambda: "ntn_" + _pick(string.digits, 11) + _an(35), "notion {s}"),
    *_kind("postman", lambda: "PMAK-" + _pick(_HEXL, 24) + "-" + _pick(_HEXL, 34), "postman {s}"),
    *_kind("stripe", lambda: "sk_live_" + _an(40), "stripe {s}"),
    *_kind("stripe-webhook", lambda: "whsec_" + _an(32), "webhook {s}"),
    *_kind("square", lambda: "sq0csp-" + _an(43), "square {s}"),
    *_kind("braintree", lambda: "access_token$production$" + _pick(_LOWER_AN, 16) + "$" + _pick(_HEXL, 32), "braintree {s}"),
    *_kind("shopify", lambda: "shpat_" + _pick(_HEXL, 32), "shopify {s}"),
    *_kind("flutterwave", lambda: "FLWSECK-" + _pick("abcdefgh0123456789", 32) + "-X", "flutterwave {s}"),
    *_kind("razorpay", lambda: "rzp_live_" + _an(14), "razorpay {s}"),
    *_kind("shippo", lambda: "shippo_live_" + _pick(_HEXL, 40), "shippo {s}"),
    *_kind("easypost", lambda: "EZAK" + _pick(_LOWER_AN, 54), "easypost {s}"),
    *_kind("mailgun", lambda: "key-" + _pick(_HEXL, 32), "mailgun {s}"),
    *_kind("mailchimp", lambda: _pick(_HEXL, 32) + "-us14", "mailchimp {s}"),
    *_kind("brevo", lambda: "xkeysib-" + _pick(_HEXL, 64) + "-" + _an(16), "brevo {s}"),
    *_kind("openai", lambda: "sk-proj-" + _an(48), "OPENAI {s}"),
    *_kind("groq", lambda: "gsk_" + _an(52), "groq {s}"),
    *_kind("replicate", lambda: "r8_" + _an(37), "replicate {s}"),
    *_kind("perplexity", lambda: "pplx-" + _an(48), "pplx {s}"),
    *_kind("xai", lambda: "xai-" + _an(80), "grok {s}"),
    *_kind("jwt", lambda: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI" + _an(30) + "." + _an(43), "cookie session={s}"),
    # --- secrets in a context: keys by name, URLs, headers, files -------------------------
    *_ctx(
        "url-credentials-pw",
        "git clone https://ci:{s}@git.example.com/repo.git",
        "pip install --index-url https://deploy:{s}@pypi.example.com/simple app",
        "CELERY_BROKER=amqp://worker:{s}@rabbit:5672//",
    ),
    *_ctx(
        "azure-account-key",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={s};EndpointSuffix=core.windows.net",
        "az storage blob list --account-name acct --account-key {s} -c logs",
        "AZURE_STORAGE_KEY={s}",
        make=lambda: _an(86) + "==",
    ),
    *_ctx(
        "azure-sas",
        "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2026-01-01&sp=r&sig={s}",
        'az storage blob upload --sas-token "sv=2022-11-02&ss=b&sig={s}" -f a.txt',
        "SAS_URL='https://acct.queue.core.windows.net/q?sp=a&sig={s}'",
        make=lambda: _an(43) + "%3D",
    ),
    *_ctx(
        "auth-bearer",
        "curl -H 'Authorization: Bearer {s}' https://api.example.com",
        "fetch(url, {{ headers: {{ Authorization: `Bearer {s}` }} }})",
        'http GET api.example.com "Authorization:Bearer {s}"',
        make=lambda: _an(40),
    ),
    *_ctx(
        "bearer-token",
        "the API answered 401 for Bearer {s} (expired)",
        "requests.get(url, headers={{'auth': 'Bearer {s}'}})",
        "Using bearer {s} for the upload",
        make=lambda: _an(40),
    ),
    *_ctx(
        "auth-basic",
        "Authorization: Basic {s}",
        'curl -H "Authorization: Basic {s}" https://registry.example.com/v2/',
        "Proxy-Authorization: Basic {s}",
        make=lambda: base64.b64encode(("admin:" + _an(14)).encode()).decode(),
    ),
    *_ctx(
        "aws-secret-key",
        "aws_secret_access_key = {s}",
        "aws configure set aws_secret_access_key {s}",
        "AWS_SECRET_ACCESS_KEY={s} aws s3 ls",
        make=lambda: _pick(_B64, 18) + "7" + _an(21),
    ),
    *_ctx(
        "gcp-service-account",
        '{{"type": "service_account", "private_key_id": "{s}", "client_email": "a@p.iam"}}',
        'cat key.json → "private_key_id": "{s}",',
        'sa = {{"private_key_id": "{s}"}}',
        make=lambda: _pick(_HEXL, 39) + "7",
    ),
    *_ctx(
        "slack-webhook",
        "https://hooks.slack.com/services/{s}",
        "curl -X POST -d 'payload=hi' https://hooks.slack.com/services/{s}",
        "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/{s}",
        make=lambda: "T0" + _pick(_UPPER_AN, 8) + "/B0" + _pick(_UPPER_AN, 8) + "/" + _an(24),
    ),
    *_ctx(
        "discord-webhook",
        "https://discord.com/api/webhooks/123456789012345678/{s}",
        "curl -H 'Content-Type: application/json' https://discordapp.com/api/webhooks/98765432109876/{s}",
        "DISCORD_HOOK=https://discord.com/api/webhooks/1111/{s}",
        make=lambda: _an(68),
    ),
    *_ctx(
        "teams-webhook",
        "https://contoso.webhook.office.com/webhookb2/{s}",
        "curl -d @card.json https://acme.webhook.office.com/webhookb2/{s}",
        "TEAMS_URL='https://x.webhook.office.com/webhookb2/{s}'",
        make=lambda: _an(30) + "@" + _an(20) + "/IncomingWebhook/" + _an(32),
    ),
    *_ctx(
        "postmark",
        "curl -H 'X-Postmark-Server-Token: {s}' https://api.postmarkapp.com/email",
        "X-Postmark-Account-Token: {s}",
        'headers["X-Postmark-Server-Token: {s}"]',
        make=lambda: _pick(_HEXL, 8) + "-" + _pick(_HEXL, 4) + "-4" + _pick(_HEXL, 3) + "-a" + _pick(_HEXL, 3) + "-" + _pick(_HEXL, 12),
    ),
    *_ctx(
        "private-key",
        _PEM.format(t="RSA ", body=_an(64)),
        _PEM.format(t="", body=_an(64)),
        _PEM.format(t="OPENSSH ", body=_an(64)),
        make=lambda: "MIIEpAIBAAKCAQEA" + _an(64),
    ),
    *_ctx(
        "putty-key",
        "PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nPrivate-Lines: 1\n{s}\nPrivate-MAC: 9f3a0c",
        "cat deploy.ppk\nPuTTY-User-Key-File-2: ssh-ed25519\nPrivate-Lines: 1\n{s}\nPrivate-MAC: 0b1c",
        "PuTTY-User-Key-File-3: ecdsa\nPublic-Lines: 1\n{s}\nPrivate-MAC: 77aa",
        make=lambda: "AAAAIB" + _an(40),
    ),
    *_ctx(
        "postgres-url",
        "DATABASE_URL=postgres://app:{s}@db.internal:5432/app",
        'psql "postgresql://app:{s}@localhost/app"',
        'engine = create_engine("postgresql+psycopg://app:{s}@db/app")',
    ),
    *_ctx(
        "mongodb-url",
        "mongodb+srv://root:{s}@cluster0.mongodb.net/test",
        'MONGO_URI="mongodb://svc:{s}@mongo-0:27017/app?authSource=admin"',
        "redis://default:{s}@cache.internal:6379/0",
    ),
    *_ctx(
        "dsn",
        "Server=tcp:db.example.com;Database=app;User Id=sa;Password={s};",
        '"ConnectionStrings": {{"Default": "Host=db;Username=app;Password={s}"}}',
        "Data Source=db;User ID=sa;Pwd={s};",
    ),
    *_ctx(
        "x-api-key",
        "curl -H 'X-Api-Key: {s}' https://api.example.com",
        "X-Auth-Token: {s}",
        'headers = {{"x-api-key": "{s}"}}',
        make=lambda: _an(32),
    ),
    *_ctx(
        "env-secret",
        "STRIPE_WEBHOOK_SECRET={s}",
        'export CLIENT_SECRET="{s}"',
        "  jwt_secret: {s}",
    ),
    *_ctx("env-password", "DB_PASSWORD={s}", "MYSQL_ROOT_PASSWORD={s}", "  - POSTGRES_PASSWORD={s}"),
    *_ctx(
        "json-password",
        '{{"username": "admin", "password": "{s}"}}',
        '{{"db": {{"user": "app", "passwd": "{s}"}}}}',
        "config.password = '{s}'",
    ),
    *_ctx(
        "entropy",
        "signing_key: {s}",
        '"encryption_salt": "{s}"',
        "webhook_signature => {s}",
        make=lambda: _an(32),
    ),
    *_ctx(
        "npmrc-auth",
        "_auth = {s}",
        "//npm.example.com/:_auth={s}",
        "always-auth=true\n_auth={s}",
        make=lambda: base64.b64encode(("ci:" + _an(16)).encode()).decode(),
    ),
    # --- passwords on command lines -------------------------------------------------------
    *_ctx(
        "mysql-p",
        "mysql -u root -p{s} -h db.internal app",
        "mysqldump -uroot -p{s} app > dump.sql",
        "mysqladmin -u root -p'{s}' status",
    ),
    *_ctx(
        "sshpass",
        'sshpass -p "{s}" ssh deploy@10.0.0.5',
        "sshpass -p {s} scp build.tar host:/srv",
        "SSHPASS={s} sshpass -e ssh host uptime",
    ),
    *_ctx("password-flag", "psql --password={s} -h db", "wget --password {s} ftp://files/x", "helm repo add r https://x --username u --password '{s}'"),
    *_ctx("password-flag-named", "./manage.py migrate --db-password {s}", "app --admin-password='{s}' serve", "tool --client-secret {s} --client-id abc"),
    *_ctx("pgpassword", "PGPASSWORD={s} psql -h db -U app", "export PGPASSWORD='{s}'", "MYSQL_PWD={s} mysql -u root"),
    *_ctx("redis-cli", "redis-cli -h cache -a {s} ping", "redis-cli -a '{s}' --no-auth-warning info", "redis-cli --pass {s} -h cache"),
    *_ctx("redis-config", "requirepass {s}", "CONFIG SET requirepass \"{s}\"", "masterauth {s}"),
    *_ctx("docker-login", "docker login -u me -p {s} registry.example.com", "docker login --username ci --password {s} ghcr.io", 'docker login -p "{s}" -u bot'),
    *_ctx("curl-user", "curl -u admin:{s} https://jenkins.example.com", "curl --user 'deploy:{s}' -X POST https://x", "curl -x proxy:3128 -U proxyuser:{s} https://x"),
    *_ctx("gpg-passphrase", "gpg --batch --pinentry-mode loopback --passphrase {s} -d backup.tar.gpg", 'gpg --batch --yes --passphrase="{s}" --symmetric secrets.txt', "echo data | gpg --passphrase '{s}' --batch -c -o out.gpg"),
    *_ctx("htpasswd", "htpasswd -b -c /etc/nginx/.htpasswd admin {s}", "htpasswd -nbB deploy {s} > auth/htpasswd", "docker run --rm httpd:2.4 htpasswd -Bbn registry {s}"),
    *_ctx("sqlcmd", 'sqlcmd -S tcp:db.example.com,1433 -U sa -P {s} -Q "SELECT 1"', "sqlcmd -S localhost -U sa -P '{s}' -i schema.sql", "bcp dbo.orders out orders.dat -S db -U loader -P {s} -c"),
    *_ctx("openssl-pass", "openssl pkcs12 -export -in cert.pem -inkey key.pem -out cert.p12 -passout pass:{s}", "openssl rsa -in encrypted.key -passin 'pass:{s}' -out plain.key", "openssl enc -aes-256-cbc -salt -in db.sql -out db.sql.enc -k {s}"),
    *_ctx("mongosh", 'mongosh "mongodb://db.internal:27017/app" -u admin -p {s} --authenticationDatabase admin', "mongodump --host db -u backup -p {s} --out /backups/today", "mongo admin -u root -p '{s}' --eval 'db.stats()'"),
    *_ctx("archive", "zip -r -P {s} backup.zip data/", "unzip -P '{s}' export.zip -d out/", "7z a -p{s} -mhe=on archive.7z secrets/"),
    *_ctx("ldap", "ldapsearch -x -H ldap://ldap -D cn=admin,dc=ex -w {s} -b dc=ex", "ldapadd -x -D cn=admin,dc=ex -w '{s}' -f users.ldif", "ldappasswd -x -D cn=admin -w {s} -s new uid=bob"),
    *_ctx("ipmitool", "ipmitool -I lanplus -H 10.0.0.9 -U ADMIN -P {s} chassis status", "ipmitool -H bmc1 -U root -P '{s}' power cycle", "ipmitool -I lan -H 10.1.1.1 -U admin -P {s} sel list"),
    *_ctx("ssh-keygen", "ssh-keygen -t ed25519 -N '{s}' -f ~/.ssh/deploy", 'ssh-keygen -p -P "{s}" -N new -f key', "ssh-keygen -q -t rsa -N {s} -f id"),
    *_ctx("snmp", "snmpwalk -v3 -l authPriv -u mon -a SHA -A {s} -x AES -X other host", "snmpget -v3 -u mon -l authNoPriv -a MD5 -A '{s}' host sysName.0", "snmpwalk -v3 -l authPriv -u m -a SHA -A a -x AES -X {s} host"),
    *_ctx("az-login", "az login --service-principal -u app -p {s} --tenant t", "az login -u me@corp.com -p '{s}'", "az login --service-principal --username app --password {s} --tenant t"),
    *_ctx("twine", "twine upload -u __token__ -p {s} dist/*", "python -m twine upload -u me -p '{s}' dist/*", "twine upload --repository-url https://x -u u -p {s} dist/*"),
    *_ctx("rdp", "xfreerdp /v:10.0.0.4 /u:admin /p:{s}", "rdesktop -u admin -p {s} 10.0.0.4", "wfreerdp /u:svc /p:'{s}' /v:host"),
    *_ctx("smb", "smbclient //fs/share -U 'corp\\svc%{s}'", "rpcclient -U admin%{s} 10.0.0.3", "smbclient -L //nas -U backup%{s}"),
    *_ctx("lftp", "lftp -u deploy,{s} sftp://files.example.com", "lftp -u 'ftp,{s}' ftp://mirror", "lftp -e 'mirror -R' -u up,{s} ftp://host"),
    *_ctx("sqlplus", "sqlplus scott/{s}@orcl", "sqlplus -s app/{s}@//db:1521/xe @run.sql", "expdp system/{s} schemas=hr directory=dp"),
    *_ctx("rabbitmq", "rabbitmqctl add_user app {s}", "rabbitmqctl change_password guest '{s}'", "sudo rabbitmqctl add_user monitor {s} && echo ok"),
    *_ctx("chpasswd", "echo 'deploy:{s}' | sudo chpasswd", 'echo "root:{s}" | chpasswd', "echo ci:{s} | chpasswd"),
    *_ctx("wifi", "nmcli dev wifi connect HomeNet password {s}", "wpa_passphrase HomeNet {s} > /etc/wpa.conf", "nmcli con modify office wifi-sec.psk {s}"),
    *_ctx("keytool", "keytool -importkeystore -srcstorepass {s} -deststorepass changeit", "keytool -genkeypair -alias app -keypass '{s}' -keystore ks.jks", "jarsigner -storepass {s} app.jar alias"),
    *_ctx("mosquitto", "mosquitto_pub -h broker -u iot -P {s} -t t -m hi", "mosquitto_sub -u dash -P '{s}' -t 'sensors/#'", "mosquitto_pub -P {s} -u x -t a -m b"),
    # --- credential files -----------------------------------------------------------------
    *_ctx("netrc", "machine api.heroku.com\n  login me@example.com\n  password {s}\n", 'echo "machine github.com login ci password {s}" > ~/.netrc', "cat ~/.netrc\nmachine registry.example.com\nlogin deploy\npassword {s}\n"),
    *_ctx("pgpass", "db.internal:5432:app:app_user:{s}", 'echo "localhost:5432:*:postgres:{s}" >> ~/.pgpass && chmod 600 ~/.pgpass', "*:*:analytics:reporter:{s}"),
    # --- cookies --------------------------------------------------------------------------
    *_ctx("cookie", "curl -H 'Cookie: sessionid={s}; csrftoken=abc' https://app.example.com/api/me", "Set-Cookie: session={s}; Path=/; HttpOnly; Secure", "curl -b 'connect.sid={s}' https://app.example.com/admin"),
    # --- prose ----------------------------------------------------------------------------
    *_ctx("password-prose", "The staging database password is {s}, rotate it after the demo.", 'Note: the password for the admin account is "{s}".', "log in as root with password {s} and then change it"),
)

_RUN = re.compile(r"[A-Za-z0-9]{10,}")


def fingerprint(secret: str) -> str:
    """The longest letters-and-digits run of the value, at most 16 characters from its end."""
    run = max(_RUN.findall(secret), key=len)
    return run[-16:]


def first_of_each_kind() -> list[Planted]:
    """One value per kind (the first), for tests that need one of each."""
    seen: dict[str, Planted] = {}
    for p in PLANTED:
        seen.setdefault(p.kind, p)
    return list(seen.values())


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


def base64_needle(p: Planted) -> str:
    """16 characters of base64_wrapped(p's text) that encode only bytes of the value (not of
    its context): what a leak of the base64 form shows."""
    text = p.context.format(s=p.secret).encode()
    first = text.index(p.secret.encode()) + len(p.secret) // 3
    start = -(-first // 3) * 4  # the first base64 group that encodes only value bytes
    return base64_wrapped(text.decode())[start : start + 16]
