"""Decoded views of text for secret matching: JSON and URL escapes, and base64 blobs."""

from __future__ import annotations

import base64
import binascii
import json
import re
from urllib.parse import unquote

__all__ = [
    "HIDING_ESCAPE",
    "base64_blobs",
    "base64_run_spans",
    "base64_texts",
    "decode_base64",
    "unescape",
]

# Escapes that can hide a printable ASCII character, so a key's letters (`sk\u002dant`,
# `%41KIA`, `https:\/\/`). Control characters and non-ASCII escapes (`\u001b`, `\u00e9`) cannot
# be part of a key, so they do not send a text down the slower decoded path.
HIDING_ESCAPE = re.compile(
    rb"\\u00[2-7][0-9A-Fa-f]|\\x[2-7][0-9A-Fa-f]|\\/|%[2-7][0-9A-Fa-f]"
)
_ESCAPE = re.compile(
    r"\\u[0-9A-Fa-f]{4}(?:\\u[0-9A-Fa-f]{4})?|\\x[0-9A-Fa-f]{2}|\\[/nrtbf\"\\]"
    r"|(?:%[0-9A-Fa-f]{2})+"
)
_SIMPLE = {"/": "/", "n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", '"': '"', "\\": "\\"}
# A blob long enough to hide a key (standard or URL-safe alphabet, optional padding).
# finditer finds each run at its leftmost character and the greedy class takes it whole, so
# no lookarounds are needed (they would make the scan several times slower).
# A run may start right after `=` (`key=<blob>`, or a blob after another blob's padding).
_BASE64 = re.compile(r"(?:^|(?<=[^A-Za-z0-9+/_-]))[A-Za-z0-9+/_-]{24,}={0,2}")
_BASE64_BYTES = re.compile(_BASE64.pattern.encode())
_MAX_BLOB_CHARS = 1 << 16
_HEX = re.compile(r"[0-9a-fA-F]+=*")
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0e-\x1f\x7f]")  # what text does not hold


def _one(m: re.Match[str]) -> str:
    s = m.group()
    if s[0] == "%":
        return unquote(s, errors="surrogateescape")
    if s[1] == "u":
        try:
            value: str = json.loads(f'"{s}"')
        except ValueError:
            return s
        return value
    if s[1] == "x":
        return chr(int(s[2:], 16))
    return _SIMPLE[s[1]]


def unescape(text: str, rounds: int = 3) -> str:
    """text with JSON (`\\u0041`, `\\/`, `\\n`), `\\x41` and URL (`%41`) escapes decoded,
    repeatedly (a value URL-encoded twice, or JSON inside JSON), up to `rounds` times."""
    for _ in range(rounds):
        decoded = _ESCAPE.sub(_one, text)
        if decoded == text:
            break
        text = decoded
    return text


def _plausible(run: str) -> bool:
    """False for runs that are evidently no base64: paths (a `/` every few characters),
    snake_case or kebab-case names, one-case words and hex digests. Base64 of text mixes
    upper and lower case, and holds each of `/`, `+`, `-`, `_` once in 64 characters.
    A path with a blob glued to its end (`/a/b/c/<blob>`) is judged by what follows its last
    slash near the start."""
    if _plausible_run(run):
        return True
    last = run.rfind("/", 0, _SLASH_WINDOW)
    return last >= 0 and len(run) - last - 1 >= 24 and _plausible_run(run[last + 1 :])


def _plausible_run(run: str) -> bool:
    if len(run) > _MAX_BLOB_CHARS:
        return False
    limit = 2 + len(run) // 24
    if run.count("/") > limit or run.count("_") + run.count("-") > limit:
        return False
    return not (run.islower() or run.isupper() or _HEX.fullmatch(run))


def base64_blobs(text: str) -> list[tuple[int, int]]:
    """Spans of base64-looking runs long enough to hide a key."""
    return [m.span() for m in _BASE64.finditer(text) if _plausible(m.group())]


def base64_run_spans(text: str, data: bytes, starts: list[int]) -> list[tuple[int, int]]:
    """base64_blobs(text) from the run starts a probe found in `data` (text in UTF-8): each
    run is matched where it starts instead of searched for across the whole text."""
    spans = []
    same = len(data) == len(text)  # ASCII: byte and character offsets coincide
    pos = prev = 0
    for start in starts:
        if same:
            pos = start
        else:  # runs are ASCII, so every start is a character boundary
            pos += len(data[prev:start].decode("utf-8", "surrogatepass"))
            prev = start
        m = _BASE64.match(text, pos)
        if m is not None and _plausible(m.group()):
            spans.append(m.span())
    return spans


# The same runs come back event after event (project paths, class names, ids of a session):
# what each decodes to is remembered, in a bounded table of short runs (~1 MB at most).
_RUN_TEXTS: dict[bytes, str | None] = {}
_CACHED_RUNS = 2048
_CACHED_RUN_BYTES = 256
_UNKNOWN = ""  # no run decodes to "" (decode_base64 returns None for it)


def base64_texts(data: bytes, starts: list[int]) -> list[str]:
    """The texts that the base64-looking runs starting at `starts` in data decode to (runs
    that decode to binary, such as hashes and paths, are left out)."""
    texts = []
    for start in starts:
        m = _BASE64_BYTES.match(data, start)
        if m is None:
            continue
        run = m.group()
        text = _RUN_TEXTS.get(run, _UNKNOWN)
        if text is _UNKNOWN:
            ascii_run = run.decode("ascii")
            text = decode_base64(ascii_run) if _plausible(ascii_run) else None
            if len(run) <= _CACHED_RUN_BYTES:
                if len(_RUN_TEXTS) >= _CACHED_RUNS:
                    _RUN_TEXTS.clear()
                _RUN_TEXTS[run] = text
        if text is not None:
            texts.append(text)
    return texts


def decode_base64(blob: str) -> str | None:
    """The text a base64 blob encodes, or None when it is not text (a hash, a path, binary).

    `/` is a base64 character, so a blob written right after a path (`/tmp/<blob>`) is read
    from the path's first character, out of step with its groups: what the blob decodes to from
    just after each of its first few slashes is tried too, and every text found is returned,
    one per line (the caller redacts the whole run when any of them holds a secret). The
    slashes tried are the last few in the first 128 characters.
    """
    texts = [_decode_whole(blob)]
    slashes = [i for i, c in enumerate(blob[:_SLASH_WINDOW]) if c == "/"]
    for i in slashes[-_MAX_SLASH_SHIFTS:]:  # the path's last slashes are nearest the blob
        if len(blob) - i - 1 >= 24:
            texts.append(_decode_whole(blob[i + 1 :]))
    found = [t for t in texts if t]
    return "\n".join(found) if found else None


_MAX_SLASH_SHIFTS = 8
_SLASH_WINDOW = 128


def _decode_whole(blob: str) -> str | None:
    raw = blob.rstrip("=")
    if len(raw) % 4 == 1:  # no whole blob ends so: a clipped one, its last character dropped
        raw = raw[:-1]
    padded = raw + "=" * (-len(raw) % 4)
    try:
        if "-" in raw or "_" in raw:
            data = base64.urlsafe_b64decode(padded)
        else:
            data = base64.b64decode(padded, validate=True)
        if _CONTROL.search(data) is not None:
            return None
        # A blob clipped with its text may end inside a character: that one is replaced.
        text = data.decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return None
    if text.count("\ufffd") > 2:
        return None
    return text or None
