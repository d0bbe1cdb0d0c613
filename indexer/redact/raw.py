"""Secret and `<private>` rules on raw compact-JSON lines, never decoded: prefilter and edits."""

from __future__ import annotations

import re
from collections.abc import Callable

# JSON safety: the line is never decoded. No edit crosses an unescaped `"` (classes exclude `"`
# and `\`; <private> and PEM spans stop where their JSON string ends) or starts on the letter
# of an escape (`\r` + "k_live_…" is a CR); replacements hold no `"` or `\`; overlaps merge.
# Speed: the prefilter is eight literal-prefixed scans, each on a rarer first letter (re's
# prefix loop is about twice as fast as `bytes in bytes`); `\u003c`-style escapes are not seen.

_BS = 0x5C  # backslash
_ALNUM = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_STR_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)  # rest of a JSON string; linear

_AWS = re.compile(rb"A[KS]IA[A-Z0-9]{16}(?![A-Za-z0-9])")
_GOOGLE = re.compile(rb"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])")
_GITHUB = re.compile(rb"gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}")
_JWT = re.compile(rb"eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
_SLACK = re.compile(rb"xox[abposr]-[0-9A-Za-z-]{10,}")
_SLACK_HOOK = re.compile(rb"hooks\.slack\.com/services/[A-Za-z0-9_/-]+")
_ANTHROPIC = re.compile(rb"sk-ant-[A-Za-z0-9_-]{20,}")
_OPENAI = re.compile(rb"sk-[A-Za-z0-9_-]{20,}")
_STRIPE = re.compile(rb"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{10,}|pk_live_[0-9A-Za-z]{10,}")
# scheme://user:PASSWORD@host, not ${DB_PASS} (a reference)
_URL_CREDS = re.compile(rb'://[^\s:/@"\\]*:([^\s:/@"\\${][^\s:/@"\\]*)@')
_PRIVATE_OPEN = re.compile(rb'<private(?:\s(?:[^>"\\]|\\.)*)?>')  # on the lower-cased copy
_PEM_BEGIN = re.compile(rb"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(rb"-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
# A key cut off before its END line (a truncated Read): the base64 lines after the header
_PEM_BODY = re.compile(rb"(?:\\[nr]|[ \t])*[\w+/=]{16,}(?:(?:\\[nr]|[ \t])+[\w+/=]+)*")

# After a key that ends in a secret word (DB_PASSWORD, client_secret, OPENAI_API_KEY,
# ANTHROPIC_AUTH_TOKEN, "password"): the separator and the value. The word must END the key,
# so "secretary:", "tokens = …" and "password_field = …" are not assignments of a secret.
_ASSIGN_TAIL = re.compile(
    rb"""
      "\s*:\s*"(?P<json>[^"\\]*(?:\\.[^"\\]*)*)"      # a JSON member: "password": "<value>"
    | (?:\\"|')?                                      # closing quote of a quoted key in text
      (?:\s*:\s*[A-Za-z_][A-Za-z0-9_.|\[\] ]{0,40}?\s*=(?!=)   # password: str = ...
       |\s*[:=](?!=))                                 # password=..., password: ...
      \s*
      (?:\\"(?P<dq>(?!\s)(?:[^"\\]|\\[\\/])+?)\\"     # "..." in a JSON string; a leading
       |'(?P<sq>(?!\s)[^'"\\]+)'                       # space means the quote was a closing one
       |(?P<bare>[^\s"\\,;&'`<>)}\]]+))               # unquoted, up to a delimiter
    """,
    re.VERBOSE,
)
_DIGIT = re.compile(rb"[0-9]")
_GENERIC, _AWS_SECRET_TAG = b"[REDACTED:secret]", b"[REDACTED:aws-secret-key]"
# References, not literals: dotted names (process.env.X, self.token; digits only at a segment's
# end, so ya29.a0Af… goes) and environment variable names (authToken: DATABASE_AUTH_TOKEN).
_REFERENCE = re.compile(rb"[A-Za-z_$]+[0-9]*(?:\.[A-Za-z_$]+[0-9]*)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_PROSE_NEXT = re.compile(rb" [A-Za-z]")
_PLACEHOLDERS = frozenset(
    b"none null nil true false undefined str string bytes int bool boolean "
    b"number any object optional required redacted empty await new "
    b"function lambda self this async".split()
)


def _escaped(s: bytes, i: int) -> bool:
    """True if s[i] follows an odd run of backslashes, i.e. is the letter of an escape."""
    j = i - 1
    while j >= 0 and s[j] == _BS:
        j -= 1
    return (i - 1 - j) % 2 == 1


def _starts_token(s: bytes, i: int) -> bool:
    """True if a token may start at s[i]: not an escape letter, not glued to a letter or digit
    (an escape before it, `\\n` or `\\u00e9`, is a boundary: it decodes to another character)."""
    if i < 0 or _escaped(s, i):
        return False
    if i == 0 or s[i - 1] not in _ALNUM:
        return True
    if i >= 2 and s[i - 2] == _BS and s[i - 1] in b"nrtbf" and _escaped(s, i - 1):
        return True
    return i >= 6 and s[i - 5] == ord("u") and _escaped(s, i - 5) and _HEX.issuperset(s[i - 4 : i])


def _keep_value(value: bytes, quoted: bool, pwd: bool, prose: bool) -> bool:
    """True if an assigned value is evidently no secret. Quoted values go unless placeholders;
    unquoted ones of 4+ characters go unless code (`getenv(`, `os.environ[`, `$VAR`, references
    such as `process.env.X`). Bare words go: .env secrets look like identifiers, so `token =
    next_token` goes too; losing a name costs a reader less than leaking a password."""
    lower = value.lower()
    if not value.strip(b".*xX") or lower in _PLACEHOLDERS:  # masks: "...", "****", "xxxx"
        return True
    if lower.startswith((b"$", b"{{", b"%(", b"[redacted", b"<")):
        return True
    if pwd and value[:1] in (b"/", b"~"):  # PWD=/home/me in `env` output is a directory
        return True
    if quoted:
        return False
    if len(value) < 4 or (prose and value.isalpha()):
        return True
    if b"(" in value or b"[" in value or b"{" in value:
        return True
    return _REFERENCE.fullmatch(value) is not None


class _Scan:
    """One redaction pass over a line: the line, its lower-cased copy and the edits found."""

    __slots__ = ("data", "edits", "lower", "str_end", "str_from")

    def __init__(self, data: bytes, lower: bytes) -> None:
        self.data = data
        self.lower = lower  # bytes.lower is ASCII-only: offsets are unchanged
        self.edits: list[tuple[int, int, bytes]] = []
        self.str_from = self.str_end = -1

    def string_end(self, pos: int) -> int:
        """End of the JSON string that contains pos (cached: tags and keys come in runs)."""
        if not self.str_from <= pos <= self.str_end:
            m = _STR_REST.match(self.data, pos)
            assert m is not None  # the pattern matches the empty string
            self.str_from, self.str_end = pos, m.end()
        return self.str_end

    def token(self, start: int, pattern: re.Pattern[bytes], kind: str, group: int = 0) -> bool:
        m = pattern.match(self.data, start) if start >= 0 else None
        # A random key always has a digit; a long hyphenated word after "sk-" need not.
        if (
            m is None
            or (group == 0 and not _starts_token(self.data, start))
            or (kind == "openai-key" and _DIGIT.search(self.data, start, m.end()) is None)
        ):
            return False
        self.edits.append((m.start(group), m.end(group), b"[REDACTED:%s]" % kind.encode()))
        return True

    def assignment(self, key_end: int, aws: bool = False, pwd: bool = False) -> bool:
        m = _ASSIGN_TAIL.match(self.data, key_end)
        if m is None or m.lastgroup is None:
            return False
        start, end = m.span(m.lastgroup)
        # "Session token: Random UUID in a cookie": after a colon, words then more words: prose.
        prose = b"=" not in self.data[key_end:start] and bool(_PROSE_NEXT.match(self.data, end))
        if _keep_value(self.data[start:end], m.lastgroup != "bare", pwd, prose):
            return False
        self.edits.append((start, end, _AWS_SECRET_TAG if aws else _GENERIC))
        return True

    def private_tag(self, i: int) -> None:
        # Non-greedy up to the first </private> of the same JSON string. An unclosed tag is
        # left alone: it is usually code or prose that mentions the tag (like this module).
        m = _PRIVATE_OPEN.match(self.lower, i)
        if m is not None:
            j = self.lower.find(b"</private>", m.end(), self.string_end(m.end()))
            if j != -1:
                self.edits.append((i, j + 10, b"[REDACTED:private]"))

    def pem(self, i: int) -> None:
        m = _PEM_BEGIN.match(self.data, i)
        if m is None:
            return
        str_end = self.string_end(m.end())
        end = _PEM_END.search(self.data, m.end(), str_end)
        if (end := end or _PEM_BODY.match(self.data, m.end(), str_end)) is not None:
            self.edits.append((i, end.end(), b"[REDACTED:private-key]"))


def _on_k(scan: _Scan, m: re.Match[bytes]) -> None:
    s, hit, lower = m.start(), m.group(), scan.lower
    if hit[:2] == b"ke":  # token; api_key, apikey, api-key, access_key, secret_key
        prefixes = (b"to",) if hit[2] == ord("n") else _KEY_PREFIXES
        if any(s >= len(p) and lower.startswith(p, s - len(p)) for p in prefixes):
            scan.assignment(s + 3, aws=b"aws_secret" in lower[max(0, s - 20) : s])
    elif hit == b"k-":
        sk = s >= 1 and scan.data.startswith(b"sk-", s - 1)
        if sk and not scan.token(s - 1, _ANTHROPIC, "anthropic-key"):
            scan.token(s - 1, _OPENAI, "openai-key")
    elif hit != b"k.com/services/":  # k_live_, k_test_
        scan.token(s - 1, _STRIPE, "stripe-key")
    else:
        scan.token(s - 10, _SLACK_HOOK, "slack-webhook")


def _on_p(scan: _Scan, m: re.Match[bytes]) -> None:
    s, hit = m.start(), m.group()
    if hit != b"private":  # password, passwd, passphrase, pwd
        word = next(w for w in _P_WORDS if hit.startswith(w))
        scan.assignment(s + len(word), pwd=word == b"pwd")
        return
    # "private": a <private> tag, or the middle of a PEM header.
    if s >= 1 and scan.lower[s - 1] == ord("<"):
        scan.private_tag(s - 1)
    if (begin := scan.data.rfind(b"-----BEGIN ", max(0, s - 52), s)) != -1:
        scan.pem(begin)


_Handler = Callable[[_Scan, re.Match[bytes]], object]
# A key word counts only at the end of a key: a separator follows (maybe after a quote).
# Gates hold no groups or lookbehinds: those make re's scan about 1.5 times slower.
_SEP = rb"""(?:\\?"|')?\s*[:=]"""
_KEY_PREFIXES = (b"api_", b"api-", b"api", b"access_", b"secret_")
_P_WORDS = (b"password", b"passwd", b"passphrase", b"pwd")
# (gate, scans the lower-cased copy?, a byte the line must hold first, handler). Every gate
# starts with a literal; on a hit, finditer resumes there and the handler checks each match.
_GATES: tuple[tuple[re.Pattern[bytes], bool, bytes | None, _Handler], ...] = (
    (
        re.compile(rb"A(?:[KS]IA|Iza)"),
        False,
        None,
        lambda scan, m: (
            scan.token(m.start(), _AWS, "aws-access-key")
            or scan.token(m.start(), _GOOGLE, "google-api-key")
        ),
    ),
    (
        re.compile(rb"g(?:h[pousr]_|ithub_pat_)"),
        False,
        None,
        lambda scan, m: scan.token(m.start(), _GITHUB, "github-token"),
    ),
    (re.compile(rb"yJ"), False, None, lambda scan, m: scan.token(m.start() - 1, _JWT, "jwt")),
    (
        re.compile(rb"xox"),
        False,
        None,
        lambda scan, m: scan.token(m.start(), _SLACK, "slack-token"),
    ),
    (
        re.compile(rb"://"),
        False,
        b"@",  # group 1: only the password goes
        lambda scan, m: scan.token(m.start(), _URL_CREDS, "url-credentials", 1),
    ),
    (re.compile(rb"k(?:e[ny]" + _SEP + rb"|-|_live_|_test_|\.com/services/)"), True, None, _on_k),
    (re.compile(rb"p(?:rivate|(?:ass(?:word|wd|phrase)|wd)" + _SEP + rb")"), True, None, _on_p),
    (
        re.compile(rb"cret" + _SEP),
        True,
        None,  # secret, client_secret
        lambda scan, m: (
            scan.lower[max(0, m.start() - 2) : m.start()] == b"se"
            and scan.assignment(m.start() + 4)
        ),
    ),
)


def _scan(data: bytes, first_only: bool) -> _Scan | None:
    """Run the gates; on a hit, the handlers (or stop, for the prefilter)."""
    scan, lower = None, b""
    for gate, on_lower, needs, handler in _GATES:
        if needs is not None and needs not in data:
            continue
        if on_lower and not lower:
            lower = data.lower()  # one copy for all case-insensitive words
        text = lower if on_lower else data
        if (first := gate.search(text)) is None:
            continue
        scan = scan or _Scan(data, lower := lower or data.lower())
        if first_only:
            return scan
        for m in gate.finditer(text, first.start()):  # resume: the line is scanned once
            handler(scan, m)
    return scan


def may_contain_secret(data: bytes) -> bool:
    """The prefilter: False when no rule can match data (most lines); a few literal scans."""
    return _scan(data, True) is not None


def _apply(data: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    """data with the edits applied; overlapping edits merge into the first one's tag."""
    edits.sort(key=lambda e: (e[0], -e[1], e[2] == _GENERIC))  # specific kinds win ties
    out: list[bytes] = []
    last = 0  # end of the text already emitted
    for start, end, replacement in edits:
        if start < last:  # overlaps the previous edit: extend it
            last = max(last, end)
            continue
        out += (data[last:start], replacement)
        last = end
    out.append(data[last:])
    return b"".join(out)


def redact_bytes(data: bytes) -> bytes:
    """Redact secrets and `<private>` spans in a raw (compact JSON) line; valid JSON stays valid.
    The same object comes back when nothing was redacted (most lines: only the gates ran)."""
    scan = _scan(data, False)
    return _apply(data, scan.edits) if scan is not None and scan.edits else data
