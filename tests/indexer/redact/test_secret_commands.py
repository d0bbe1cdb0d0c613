"""Passwords found by their context (command flags, credential files, cookies, prose): each
shape redacted to the exact expected text, and the same flags and words where they are no
password left as they are."""

from __future__ import annotations

import pytest

from indexer.redact.scan import find_secrets
from indexer.redact.text import redact_text

PW = "Xq7vR2mK9pL4wZ8n"
VAULT_LEGACY = "s.Hg5DThIdm4tJkqEFNgyJn8GM"
DOPPLER_SERVICE = "dp.st.prd." + "Ab3De5Gh7Jk9Mn1Pq3St5Vx7Za9Ce1Gi3Km5Oq7R"


def _tag(kind: str) -> str:
    return f"[REDACTED:{kind}]"


# (id, text, what it must become). The first twelve are the shapes that were stored in plain.
POSITIVE = [
    (
        "gpg-passphrase",
        f"gpg --batch --pinentry-mode loopback --passphrase {PW} -d backup.tar.gpg",
        f"gpg --batch --pinentry-mode loopback --passphrase {_tag('password-flag')} -d backup.tar.gpg",
    ),
    (
        "htpasswd-b",
        f"htpasswd -b -c /etc/nginx/.htpasswd admin {PW}",
        f"htpasswd -b -c /etc/nginx/.htpasswd admin {_tag('htpasswd-password')}",
    ),
    (
        "htpasswd-nb",
        f"docker run --rm httpd:2.4 htpasswd -Bbn registry {PW} > auth/htpasswd",
        f"docker run --rm httpd:2.4 htpasswd -Bbn registry {_tag('htpasswd-password')} > auth/htpasswd",
    ),
    (
        "netrc",
        f"machine api.heroku.com\n  login me@example.com\n  password {PW}\n",
        f"machine api.heroku.com\n  login me@example.com\n  password {_tag('netrc-password')}\n",
    ),
    (
        "netrc-one-line",
        f'echo "machine github.com login ci password {PW}" > ~/.netrc',
        f'echo "machine github.com login ci password {_tag("netrc-password")}" > ~/.netrc',
    ),
    (
        "netrc-in-a-string",
        f"KeyError: 'cat ~/.netrc\\nmachine r.example.com\\nlogin deploy\\npassword {PW}\\n'",
        f"KeyError: 'cat ~/.netrc\\nmachine r.example.com\\nlogin deploy\\npassword {_tag('netrc-password')}\\n'",
    ),
    (
        "pgpass-in-a-string",
        f'{{"content": "h1:5432:app:app:{PW}\\nh2:5432:*:ro:{PW}7\\n"}}',
        f'{{"content": "h1:5432:app:app:{_tag("pgpass-password")}\\nh2:5432:*:ro:{_tag("pgpass-password")}\\n"}}',
    ),
    (
        "pgpass",
        f"echo 'db.internal:5432:app:app_user:{PW}' >> ~/.pgpass",
        f"echo 'db.internal:5432:app:app_user:{_tag('pgpass-password')}' >> ~/.pgpass",
    ),
    (
        "pgpass-wildcards",
        f"*:*:analytics:reporter:{PW}",
        f"*:*:analytics:reporter:{_tag('pgpass-password')}",
    ),
    (
        "sqlcmd",
        f'sqlcmd -S tcp:db.example.com,1433 -U sa -P {PW} -Q "SELECT 1"',
        f'sqlcmd -S tcp:db.example.com,1433 -U sa -P {_tag("sqlcmd-password")} -Q "SELECT 1"',
    ),
    (
        "openssl-passout",
        f"openssl pkcs12 -export -in c.pem -out c.p12 -passout pass:{PW}",
        f"openssl pkcs12 -export -in c.pem -out c.p12 -passout pass:{_tag('openssl-password')}",
    ),
    (
        "openssl-passin",
        f"openssl rsa -in enc.key -passin 'pass:{PW}' -out plain.key",
        f"openssl rsa -in enc.key -passin 'pass:{_tag('openssl-password')}' -out plain.key",
    ),
    ("vault-legacy", f"vault login {VAULT_LEGACY}", f"vault login {_tag('vault-token')}"),
    (
        "cookie-header",
        f"curl -H 'Cookie: sessionid={PW}; csrftoken=abc' https://app.example.com/me",
        f"curl -H 'Cookie: sessionid={_tag('cookie')}' https://app.example.com/me",
    ),
    (
        "curl-cookie",
        f"curl -b 'connect.sid={PW}' https://app.example.com/admin",
        f"curl -b 'connect.sid={_tag('cookie')}' https://app.example.com/admin",
    ),
    ("doppler-service", f"doppler {DOPPLER_SERVICE}", f"doppler {_tag('doppler-token')}"),
    (
        "mongosh",
        f'mongosh "mongodb://db:27017/app" -u admin -p {PW} --authenticationDatabase admin',
        f'mongosh "mongodb://db:27017/app" -u admin -p {_tag("mongo-password")} --authenticationDatabase admin',
    ),
    (
        "mongodump",
        f"mongodump --host db -u backup -p '{PW}' --out /backups",
        f"mongodump --host db -u backup -p '{_tag('mongo-password')}' --out /backups",
    ),
    (
        "zip",
        f"zip -r -P {PW} backup.zip data/",
        f"zip -r -P {_tag('archive-password')} backup.zip data/",
    ),
    (
        "7z",
        f"7z a -p{PW} -mhe=on a.7z secrets/",
        f"7z a -p{_tag('archive-password')} -mhe=on a.7z secrets/",
    ),
    (
        "prose",
        f"The staging database password is {PW}, rotate it after the demo.",
        f"The staging database password is {_tag('password-prose')}, rotate it after the demo.",
    ),
    (
        "prose-quoted",
        f'Note: the password for the admin account is "{PW}".',
        f'Note: the password for the admin account is "{_tag("password-prose")}".',
    ),
    (
        "prose-with",
        f"log in as root with password {PW} and change it",
        f"log in as root with password {_tag('password-prose')} and change it",
    ),
    # more commands that take a password as an argument
    (
        "ldap",
        f"ldapsearch -x -D cn=admin -w {PW} -b dc=ex",
        f"ldapsearch -x -D cn=admin -w {_tag('ldap-password')} -b dc=ex",
    ),
    (
        "ipmitool",
        f"ipmitool -H 10.0.0.9 -U ADMIN -P {PW} power on",
        f"ipmitool -H 10.0.0.9 -U ADMIN -P {_tag('ipmitool-password')} power on",
    ),
    (
        "ssh-keygen",
        f"ssh-keygen -t ed25519 -N '{PW}' -f k",
        f"ssh-keygen -t ed25519 -N '{_tag('ssh-keygen-passphrase')}' -f k",
    ),
    (
        "snmp-both",
        f"snmpwalk -v3 -a SHA -A {PW} -x AES -X {PW}9 host",
        f"snmpwalk -v3 -a SHA -A {_tag('snmp-passphrase')} -x AES -X {_tag('snmp-passphrase')} host",
    ),
    (
        "az-login",
        f"az login -u app -p {PW} --tenant t",
        f"az login -u app -p {_tag('azure-cli-password')} --tenant t",
    ),
    (
        "smbclient",
        f"smbclient //fs/share -U 'svc%{PW}'",
        f"smbclient //fs/share -U 'svc%{_tag('smb-password')}'",
    ),
    (
        "lftp",
        f"lftp -u deploy,{PW} sftp://files",
        f"lftp -u deploy,{_tag('lftp-password')} sftp://files",
    ),
    ("sqlplus", f"sqlplus scott/{PW}@orcl", f"sqlplus scott/{_tag('sqlplus-password')}@orcl"),
    (
        "rabbitmq",
        f"rabbitmqctl add_user app {PW}",
        f"rabbitmqctl add_user app {_tag('rabbitmq-password')}",
    ),
    (
        "chpasswd",
        f"echo 'deploy:{PW}' | sudo chpasswd",
        f"echo 'deploy:{_tag('chpasswd-password')}' | sudo chpasswd",
    ),
    (
        "nmcli",
        f"nmcli dev wifi connect Home password {PW}",
        f"nmcli dev wifi connect Home password {_tag('wifi-password')}",
    ),
    (
        "keytool",
        f"keytool -importkeystore -srcstorepass {PW}",
        f"keytool -importkeystore -srcstorepass {_tag('password-flag')}",
    ),
    (
        "prefixed-flag",
        f"./manage --db-password {PW}",
        f"./manage --db-password {_tag('password-flag')}",
    ),
    (
        "mosquitto",
        f"mosquitto_pub -u iot -P {PW} -t t",
        f"mosquitto_pub -u iot -P {_tag('mosquitto-password')} -t t",
    ),
    ("redis-conf", f"requirepass {PW}", f"requirepass {_tag('redis-config-password')}"),
    (
        "xfreerdp",
        f"xfreerdp /v:10.0.0.4 /u:admin /p:{PW}",
        f"xfreerdp /v:10.0.0.4 /u:admin /p:{_tag('rdesktop-password')}",
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"), [r[1:] for r in POSITIVE], ids=[r[0] for r in POSITIVE]
)
def test_password_in_context_is_redacted(text: str, expected: str) -> None:
    assert redact_text(text) == expected


# The same flags and words where they hold no password (each one seen in real sessions or
# the commands' manuals): ports, parents, patterns, prompts, test output, prose.
NEGATIVE = [
    "ssh -p 22 deploy@10.0.0.5",
    "scp -P 2222 build.tar host:/tmp",
    "mkdir -p src/components/ui",
    "docker run -p 8080:80 nginx",
    "git add -p",
    "patch -p1 < fix.diff",
    "pytest -p no:cacheprovider tests",
    "ps -p 1234 -o pid,cmd",
    "xargs -P 4 -n 1 echo",
    "mysql -P 3306 -h db -u app -p app",
    "psql -p 5432 -h db",
    "redis-cli -p 6379 ping",
    "mongosh --port 27017",
    "mongosh -u admin -p --authenticationDatabase admin",
    "zip -r out.zip dir",
    "rsync -P -av a b",
    "list(zip(a, b))",
    "7z x archive.7z -o out",
    "--- PASS: TestBuild (0.00s)",
    "// Second pass: batch process cache misses",
    "Session cookie: `pragma_admin_session` (httpOnly, 24-hour expiry)",
    "Cookie: theme=dark",
    "curl -c /tmp/cookies.txt -b /tmp/cookies.txt https://x",
    "The admin password is stored as a bcrypt hash in `.env.local`.",
    "the password is incorrect",
    "The password was reset.",
    "the password is 8 characters long",
    "use password authentication",
    "git commit -m 'the password is now hashed'",
    "machine learning",
    "The espresso machine is on its last legs",
    "00:11:22:33:44:55",
    "ab:12:cd:34:ef:56",
    "main.go:12:5: undefined: x",
    "htpasswd -c .htpasswd admin",
    "gpg --passphrase-fd 0 --batch -d x",
    "docker login --password-stdin",
    "psql --no-password app",
    "openssl req -new -key key.pem -passin env:KEY_PASS",
    "openssl rsa -passin file:pass.txt",
    "sqlplus / as sysdba",
    "sqlplus /nolog",
    "the --passphrase option",
    "ssh-keygen -N '' -f k",
    "ldapsearch -x -W -D cn=admin",
    "options.maxConcurrentRequestsPerHostX",
    "this.s.abcdefghijklmnopqrstuvwx",
]


@pytest.mark.parametrize("text", NEGATIVE)
def test_the_same_flags_without_a_password_stay(text: str) -> None:
    assert redact_text(text) is text


def test_each_context_rule_finds_its_own_sample() -> None:
    """Every sample is found by the rule it is about, not only by an earlier, wider one."""
    for name, text, expected in POSITIVE:
        kinds = {kind for _s, _e, kind in find_secrets(text)}
        wanted = {k for k in kinds if f"[REDACTED:{k}]" in expected}
        assert wanted, (name, kinds)
