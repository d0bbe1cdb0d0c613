"""Secret rules for passwords by where they stand: command flags, credential files and prose."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

# A password has no shape of its own: these rules find it by its context. A flag such as `-p`
# is a password only for the commands that take one that way (`mysql -psecret`, `mongosh -p
# secret`); elsewhere it is a port (`ssh -p 22`), parents (`mkdir -p`) or a pattern (`git add
# -p`), so each rule names its commands. Group "s" (or "s2", "s3": a quoted or bare shell
# value) is the secret; the command and flag stay readable. indexer.redact.rules compiles them.

__all__ = ["CONTEXT_RULES", "SHELL_VALUE", "ContextRule", "probe_on_raw_json"]


def probe_on_raw_json(probe: str) -> str:
    """probe, with each `\\s` outside a character class also matching a JSON escape of a
    whitespace (`\\n`): probes run on raw JSON too, where a newline is two characters.

    A class of the characters of either (repeated: `\\n` is two) is a superset that hyperscan
    compiles several times faster than the alternation `(?:\\s|\\\\[nrt])`."""
    either = r"[\s\\nrt]"
    out: list[str] = []
    class_start = -1  # index in probe of the open `[`, or -1 outside a class
    i = 0
    while i < len(probe):
        c = probe[i]
        if c == "\\":
            pair = probe[i : i + 2]
            if pair == r"\s" and class_start < 0:
                quantifier = probe[i + 2 : i + 3]
                if quantifier in ("+", "*"):
                    out.append(either)
                elif quantifier == "?":
                    out.append(either + "{0,2}")
                    i += 1
                else:
                    out.append(either + "{1,2}")
            else:
                out.append(pair)
            i += 2
            continue
        if c == "[" and class_start < 0:
            class_start = i
        elif c == "]" and class_start >= 0 and i > class_start + (2 if probe[class_start + 1] == "^" else 1):
            class_start = -1  # (a `]` first in a class is a literal)
        out.append(c)
        i += 1
    return "".join(out)


class ContextRule(NamedTuple):
    kind: str
    pattern: str
    probe: str  # a regex matched caselessly on the raw bytes; a superset of the pattern's hits
    check: Callable[[str], bool] | None = None


# A value in a shell command: quoted, or up to whitespace or a shell operator.
SHELL_VALUE = r"""(?:"(?P<s>[^"\s]{1,200})"|'(?P<s2>[^'\s]{1,200})'|(?P<s3>[^\s"'`;&|<>()]{1,200}))"""
# A positional argument that is not a flag (a file or a user name before the password).
_ARG = r"""(?:"[^"\n]{1,200}"|'[^'\n]{1,200}'|[^\s"'`;&|<>()-][^\s"'`;&|<>()]{0,200})"""
# The rest of one command, lazily: the flag may come anywhere before a pipe or a `;`.
_REST = r"[^\n|;&]{0,300}?\s"
# A probe's gap up to a flag: unbounded (a bounded repeat costs hyperscan's compile several
# times more), and it holds the whitespace before the flag (a `\s` after it costs that again).
_PROBE_REST = r"[^|;&]*"

# Credential files are often shown inside a string (`cat` of a JSON file, a repr in a log):
# there a newline is the two characters `\n`, and a line still starts after it.
_W = r"(?:\s|\\[nrt])"
_AFTER_ESCAPE = r"(?<=\\[nrt])"
_TOKEN = r"(?:[^\s\\\"']|\\[^nrt\s])+"  # up to whitespace, a quote, or an escaped one

# Words that follow a flag's name in prose ("the --password flag"), never its value.
_PROSE_AFTER_FLAG = frozenset(
    ["flag", "option", "options", "argument", "parameter", "switch", "is", "are", "was", "to", "and", "or", "the", "a", "an", "when", "if", "with", "without", "for", "in", "of", "on", "from", "that", "which", "prompt", "prompts", "option."]
)  # fmt: skip


def password_arg(value: str) -> bool:
    """A password flag's value: not a word of prose, not the next flag (`-p --port`)."""
    return value.lower() not in _PROSE_AFTER_FLAG and not value.startswith("-")


def _cookie_value(value: str) -> bool:
    """A Cookie header worth hiding: some value of 8+ characters (not `theme=dark`)."""
    return any(len(part.split("=", 1)[-1].strip()) >= 8 for part in value.split(";"))


def _prose_password(value: str) -> bool:
    """An unquoted word after "password is": a secret when it holds a digit or a symbol
    ("hunter2", "Tr0ub4dor&3"), not a word of prose ("stored", "required", "incorrect")."""
    return len(value) >= 4 and not value.isalpha() and password_arg(value)


# A command that takes a password after a flag: (kind, the command's names, the flag, how the
# value follows it: "" either way as getopt takes it, "glued" only (`7z -pSECRET`), "spaced" only
# (`openssl -k` is not `-key`)).
_SNMP = r"snmp(?:walk|get|set|bulkwalk|bulkget|getnext|trap|table|status|df)"
_COMMAND_FLAGS = (
    ("mongo-password", r"mongo(?:sh|dump|restore|export|import|stat|top|files)?", "-p", ""),
    ("sqlcmd-password", r"sqlcmd|bcp|osql", "-P", ""),
    ("ipmitool-password", r"ipmitool", "-P", ""),
    ("mosquitto-password", r"mosquitto_(?:pub|sub|rr)", "-P", ""),
    ("archive-password", r"zip|unzip|zipcloak", "-P", ""),
    ("archive-password", r"7z[ar]?|rar|unrar", "-p", "glued"),
    ("ldap-password", r"ldap(?:search|add|modify|delete|passwd|whoami|compare|modrdn|exop)", "-w", ""),
    # Two flags of one command: a rule each (a match consumes the command's name).
    ("ssh-keygen-passphrase", r"ssh-keygen", "-N", ""),
    ("ssh-keygen-passphrase", r"ssh-keygen", "-P", ""),
    ("snmp-passphrase", _SNMP, "-A", ""),
    ("snmp-passphrase", _SNMP, "-X", ""),
    ("azure-cli-password", r"az\s+login", "-p", ""),
    ("twine-password", r"twine", "-p", ""),
    ("rdesktop-password", r"rdesktop", "-p", ""),
    ("openssl-password", r"openssl", "-k", "spaced"),
    ("wifi-password", r"nmcli", r"(?:password|wifi-sec\.psk|802-1x\.password)\s", ""),
)
# Their probe is the command's name followed by whitespace, without the flag: a gap pattern up
# to the flag costs hyperscan's compile 5-15 ms a command, more than the regexes cost where a
# command's name occurs without its flag.


def _flag(kind: str, commands: str, flag: str, value_form: str) -> ContextRule:
    """`<command> … <flag> VALUE` for the named commands only."""
    if value_form == "glued":
        value = r"(?P<s>[^\s\"'`;&|<>()-][^\s\"'`;&|<>()]{0,200})"
    else:
        value = (r"\s+" if value_form == "spaced" else r"\s*") + SHELL_VALUE
    # The command's name then whitespace, as a command line has it: not every `mongodb` of a
    # project that uses MongoDB starts a match.
    return ContextRule(
        kind,
        rf"\b(?:{commands})(?=\s){_REST}{flag}{value}",
        rf"(?:{commands})\s",
        None if value_form == "glued" else password_arg,
    )


_HTPASSWD_OPTION = (  # -n: no file argument; -b: the password is on the command line
    r"\s+-(?:(?=[A-Za-z]*n)(?P<n>))?(?:(?=[A-Za-z]*b)(?P<b>))?[A-Za-z]+(?:\s+\d+)?"
)
_PASSWORD_WORD = r"(?:password|passphrase|passcode|passwd|pass\s?word)"
_PROSE_LEAD = (  # "the password for the admin account is", "password was set to"
    rf"\b{_PASSWORD_WORD}(?:\s+(?:for|of|to|on)\s+(?:the\s+|an?\s+)?[\w.@:/-]{{1,60}}"
    r"(?:\s+(?:account|user|database|db|server|box|host))?)?"
    r"\s+(?:is|was|will\s+be|should\s+be|is\s+set\s+to|was\s+set\s+to|set\s+to)\s*:?\s+"
    r"|\b(?:with|using|use)\s+(?:the\s+)?password\s+"
)
_PROSE_PROBE = (  # the word right after "password" opens one of the leads above
    r"(?:password|passphrase|passcode|passwd|pass\s?word)\s+(?:is|was|will|should|set|for|of|to|on)\s"
    r"|(?:with|using|use)\s+(?:the\s+)?password\s"
)

CONTEXT_RULES: tuple[ContextRule, ...] = (
    # --- commands that take a password as an argument -----------------------------------------
    *(_flag(*row) for row in _COMMAND_FLAGS),
    ContextRule("sshpass-password", r"\bsshpass\s+-p\s*" + SHELL_VALUE, r"sshpass\s+-p"),
    ContextRule(
        "mysql-password",
        r"\bmysql(?:dump|admin|sh|import)?\b[^\n|;&]{0,200}?\s-p(?:\"(?P<s>[^\"\s]{1,200})\""
        r"|'(?P<s2>[^'\s]{1,200})'|(?P<s3>[^\s\"'`;&|-][^\s\"'`;&|]*))",
        r"mysql[^|;&]*-p",
    ),
    ContextRule("rdesktop-password", r"\b[xw]freerdp3?\b" + _REST + r"/p:" + SHELL_VALUE, r"freerdp" + _PROBE_REST + r"/p:"),
    ContextRule("redis-cli-password", r"\bredis-cli\b" + _REST + r"-a\s+" + SHELL_VALUE, r"redis-cli" + _PROBE_REST + r"-a"),
    ContextRule("docker-login-password", r"\bdocker\s+login\b" + _REST + r"-p\s+" + SHELL_VALUE, r"docker\s+login" + _PROBE_REST + r"-p"),
    ContextRule(
        "curl-user",
        r"\bcurl\b[^\n|;&]{0,300}?\s(?:-u|--user|-U|--proxy-user)\s*['\"]?[^\s:'\"]+:(?P<s>[^\s'\"]+)",
        r"curl" + _PROBE_REST + r"(?:-u|--user|-U|--proxy-user)",
    ),
    ContextRule(
        "htpasswd-password",
        rf"\bhtpasswd(?:{_HTPASSWD_OPTION})+(?(b)|(?!))(?(n)|\s+{_ARG})\s+{_ARG}\s+" + SHELL_VALUE,
        r"htpasswd\s+-",
        password_arg,
    ),
    ContextRule(
        "smb-password",
        r"\b(?:smbclient|rpcclient|smbcacls|smbget|smbmap|net\s+(?:rpc|ads|use))\b" + _REST
        + r"(?:-U|--user)[\s=]*['\"]?[^\s%'\"]+%(?P<s>[^\s'\"]+)",
        r"(?:smb|rpcclient|net\s)" + _PROBE_REST + r"(?:-u|--user)",
    ),
    ContextRule("lftp-password", r"\blftp\b" + _REST + r"-u\s+['\"]?[^\s,'\"]+,(?P<s>[^\s'\"]+)", r"lftp" + _PROBE_REST + r"-u"),
    ContextRule(
        "sqlplus-password",
        r"\b(?:sqlplus|expdp|impdp|rman\s+target)\b(?:\s+-\w+)*\s+['\"]?[A-Za-z_][\w$#]*/(?P<s>[^\s@/\"']+)",
        r"(?:sqlplus|expdp|impdp|rman)" + _PROBE_REST + r"/",
    ),
    ContextRule(
        "openssl-password",
        r"(?<![\w-])-(?:pass(?:in|out|word)?|(?:src|dest)?(?:store|key)pass)\s+[\"']?pass:"
        r"(?P<s>[^\s\"'`;&|<>()]{1,200})",
        r"pass(?:in|out|word)?\s+\\?[\"']?pass:",
        password_arg,
    ),
    ContextRule(
        "rabbitmq-password",
        r"\brabbitmqctl\s+(?:add_user|change_password)\s+" + _ARG + r"\s+" + SHELL_VALUE,
        r"rabbitmqctl\s+(?:add_user|change_password)",
        password_arg,
    ),
    ContextRule(
        "chpasswd-password",
        r"\becho\s+(?:-e\s+)?[\"']?[\w.-]+:(?P<s>[^\s:\"']+)[\"']?\s*\|\s*(?:sudo\s+)?chpasswd\b",
        r"chpasswd",
    ),
    ContextRule(
        "wifi-password",
        r"\bwpa_passphrase\s+" + _ARG + r"\s+" + SHELL_VALUE,
        r"wpa_passphrase\s",
        password_arg,
    ),
    # Any command's long (or single-dash) password flag: `--password=…`, `--db-password …`,
    # `gpg --passphrase …`, `keytool -storepass …`; not `--password-stdin`, `--no-password`.
    ContextRule(
        "password-flag",
        r"(?i)(?<![\w-])--?(?!no-)(?:[a-z0-9]+[-_])*(?:password|passwd|pass|passphrase|(?:src|dest|new)?(?:store|key)pass|secret|token|api[-_]?key|(?:secret|account|private|master|encryption|signing)[-_]?key)(?:=|\s+)"
        + SHELL_VALUE,
        # The word follows the flag's dash or its prefix's `-`/`_` (`--db-password`).
        r"[-_](?:password|passwd|pass|passphrase|(?:src|dest|new)?(?:store|key)pass|secret|token|api[-_]?key|(?:secret|account|private|master|encryption|signing)[-_]?key)(?:=|\s)",
        password_arg,
    ),
    ContextRule(
        "password-env",
        r"\b(?:PGPASSWORD|MYSQL_PWD|REDISCLI_AUTH|SSHPASS|PGPASS)=" + SHELL_VALUE,
        r"pgpassword|mysql_pwd|rediscli_auth|sshpass=|pgpass=",
    ),
    # redis.conf and `CONFIG SET`: `requirepass SECRET`, `masterauth SECRET`.
    ContextRule(
        "redis-config-password",
        r"(?i)\b(?:requirepass|masterauth)\s+" + SHELL_VALUE,
        r"(?:requirepass|masterauth)\s",
        password_arg,
    ),
    # --- credential files ------------------------------------------------------------------------
    # ~/.netrc: `machine HOST [login USER] [account A] password SECRET`, on one line or several.
    ContextRule(
        "netrc-password",
        rf"(?:\b|{_AFTER_ESCAPE})(?:machine{_W}+{_TOKEN}|default)(?:{_W}+(?:login|account|port){_W}+{_TOKEN})*"
        rf"{_W}+password{_W}+(?:\"(?P<s>[^\"\s]{{1,200}})\"|'(?P<s2>[^'\s]{{1,200}})'|(?P<s3>{_TOKEN}))",
        r"machine\s|default\s+(?:login|account|port|password)",
        password_arg,
    ),
    # ~/.pgpass: `host:port:database:user:password`, exactly five fields (a MAC address has six).
    ContextRule(
        "pgpass-password",
        rf"(?:{_AFTER_ESCAPE}|(?<![\w.:*/-]))(?=[\w.*-]*[A-Za-z.*])[\w.*-]+:(?:\d{{2,5}}|\*):[^\s:\"']+:[^\s:\"']+:"
        rf"(?P<s>(?:[^\s:\"'`\\]|\\[^nrt\s]){{3,}})(?=[\s\"'`]|\\[nrt]|$)",
        r"[a-z0-9.*_-]:(?:[0-9]{2,5}|\*):[^\s:]+:[^\s:]+:[^\s:]",
    ),
    # --- HTTP cookies --------------------------------------------------------------------------
    ContextRule(
        "cookie",
        r"(?i)(?<![\w-])(?:set-)?cookie\s*:\s*[^\s=;:\"'`]{1,64}=(?P<s>[^\s;\"'`][^\r\n\"'`]*)",
        r"cookie\s*:\s*[^\s=;:\"'`]+=",
        _cookie_value,
    ),
    ContextRule(
        "cookie",
        r"\bcurl\b" + _REST + r"(?:-b|--cookie)\s*(?:\"[^\s=;\"]{1,64}=(?P<s>[^\"\n]+)\""
        r"|'[^\s=;']{1,64}=(?P<s2>[^'\n]+)'|[^\s=;\"']{1,64}=(?P<s3>[^\s\"';&|]+))",
        r"curl" + _PROBE_REST + r"(?:-b|--cookie)",
        _cookie_value,
    ),
    # --- prose --------------------------------------------------------------------------------
    ContextRule(
        "password-prose",
        rf"(?i)(?:{_PROSE_LEAD})(?:\"(?P<s>[^\"\n]{{3,100}})\"|'(?P<s2>[^'\n]{{3,100}})'|`(?P<s3>[^`\n]{{3,100}})`)",
        _PROSE_PROBE,
    ),
    ContextRule(
        "password-prose",
        rf"(?i)(?:{_PROSE_LEAD})(?P<s>[^\s\"'`]*[^\s\"'`.,;:!?)\]])",
        _PROSE_PROBE,
        _prose_password,
    ),
)
