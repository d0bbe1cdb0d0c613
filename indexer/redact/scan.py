"""Find secrets in decoded text: one multi-pattern probe pass, then the rules it points at."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator

from indexer.redact.decoded import HIDING_ESCAPE
from indexer.redact.rules import RULES, is_placeholder

__all__ = ["HIDDEN", "LEGACY", "engine", "find_secrets", "probe", "probe_rules", "use_engine"]

_SECRET_GROUPS = ("s", "s2", "s3")


# Besides the rules, the same pass reports escapes that may hide a key's characters (one id
# after the rules) and the start of every run of base64 characters long enough to hide a key:
# the run pattern is anchored on the character before the run, so it matches once per run.
HIDDEN = len(RULES)
_RUN_ID = HIDDEN + 1
# The gates of the earlier rules in indexer.redact.raw (`may_contain_secret`), in the same pass:
# (pattern, caseless). Each is narrowed to where its handler can edit (`sk-`, not every `k-`;
# `api_key:`, not `titleKey:`; `<private`, not the word), a superset of the lines they edit.
LEGACY = _RUN_ID + 1
_SEP = rb"""(?:\\?"|')?\s*[:=]"""
_LEGACY_GATES = (
    (rb"A(?:[KS]IA|Iza)", False),
    (rb"g(?:h[pousr]_|ithub_pat_)", False),
    (rb"eyJ", False),
    (rb"xox", False),
    (rb"://[^\s/\"\\@]*@", False),
    (rb"(?:token|(?:api[_-]?|access_|secret_)key)" + _SEP, True),
    # Where a token may start (redact_raw's _starts_token): not glued to a letter or digit
    # (`task-id`), except after an escape (`\nsk-…`, `\u00e9sk-…`).
    (
        rb"(?:^|[^A-Za-z0-9]|\\[nrtbf]|\\u[0-9A-Fa-f]{4})"
        rb"(?:sk-|[rs]k_(?:live|test)_|pk_live_)|hooks\.slack\.com/services/",
        False,
    ),
    (rb"pass(?:word|wd|phrase)" + _SEP + rb"|pwd" + _SEP + rb"|<private", True),
    (rb"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY", False),
    (rb"secret" + _SEP, True),
)
_RUN_MIN = 24
_RUN_START = rb"(?:^|[^A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{%d}" % _RUN_MIN  # `=` may precede
_Probe = Callable[[bytes], tuple[set[int], list[int]]]


# Each distinct probe is one pattern of the pass, reported for every rule that has it (the
# commands that take a password after a flag share one).
_PROBE_RULES: dict[str, list[int]] = {}
for _i, _rule in enumerate(RULES):
    for _p in _rule.probes:
        _PROBE_RULES.setdefault(_p, []).append(_i)
_RULES_OF = tuple(tuple(ids) for ids in _PROBE_RULES.values())
_FIRST_PROBE = LEGACY + 1  # the pass's id of the first distinct probe


def _re_engine() -> _Probe:
    """Python `re` fallback: each probe searched on its own. (One alternation of them all
    misses a probe that starts inside another's match: finditer's matches never overlap.)"""
    probes = [re.compile(p.encode(), re.IGNORECASE) for p in _PROBE_RULES]
    runs = re.compile(rb"[^A-Za-z0-9+/_-][A-Za-z0-9+/_-]{%d}" % _RUN_MIN)
    legacy = [re.compile(p, re.IGNORECASE if caseless else 0) for p, caseless in _LEGACY_GATES]

    def probe(data: bytes) -> tuple[set[int], list[int]]:
        hits: set[int] = set()
        for pattern, rules in zip(probes, _RULES_OF, strict=True):
            if pattern.search(data):
                hits.update(rules)
        if HIDING_ESCAPE.search(data):
            hits.add(HIDDEN)
        if any(g.search(data) for g in legacy):
            hits.add(LEGACY)
        starts = [m.end() - _RUN_MIN - 1 for m in runs.finditer(b" " + data)]
        return hits, starts

    return probe


def _hyperscan_engine() -> _Probe:
    """Hyperscan: all probes in one database, one pass over the bytes whatever their number."""
    import hyperscan

    expressions = [p.encode() for p in _PROBE_RULES]
    ids = [_FIRST_PROBE + j for j in range(len(expressions))]
    once = hyperscan.HS_FLAG_CASELESS | hyperscan.HS_FLAG_SINGLEMATCH
    flags = [once] * len(ids)
    expressions += [HIDING_ESCAPE.pattern, _RUN_START]
    ids += [HIDDEN, _RUN_ID]
    flags += [once, 0]
    for pattern, caseless in _LEGACY_GATES:
        expressions.append(pattern)
        ids.append(LEGACY)
        flags.append(once if caseless else hyperscan.HS_FLAG_SINGLEMATCH)
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=expressions, ids=ids, elements=len(ids), flags=flags)
    lock = threading.Lock()  # one scratch space per database: scans may not overlap

    def probe(data: bytes) -> tuple[set[int], list[int]]:
        hits: set[int] = set()
        starts: list[int] = []

        def on_match(match_id: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            if match_id >= _FIRST_PROBE:
                hits.update(_RULES_OF[match_id - _FIRST_PROBE])
            elif match_id == _RUN_ID:
                starts.append(to - _RUN_MIN)
            else:  # HIDDEN, LEGACY
                hits.add(match_id)

        with lock:
            db.scan(data, match_event_handler=on_match)
        return hits, starts

    return probe


_engine: list[tuple[str, _Probe]] = []
# CTXD_REDACT_ENGINE=re forces the fallback (the benchmark compares both).
_WANTED = "re" if os.environ.get("CTXD_REDACT_ENGINE") == "re" else "hyperscan"


def use_engine(name: str) -> str:
    """Select the probe engine ("hyperscan" or "re"); returns the one in use. Without a
    hyperscan wheel for the platform the same rules run with the slower `re` probe."""
    if name == "hyperscan":
        try:
            _engine[:] = [("hyperscan", _hyperscan_engine())]
            return "hyperscan"
        except ImportError:
            pass
    _engine[:] = [("re", _re_engine())]
    return "re"


def engine() -> str:
    """The name of the probe engine in use."""
    return _engine[0][0] if _engine else use_engine(_WANTED)


def probe(data: bytes) -> tuple[set[int], list[int]]:
    """One pass over data: the indexes in RULES of the rules whose probe occurs (the rules
    worth running; HIDDEN if an escape may hide a key), and where base64-looking runs start."""
    if not _engine:  # compiled on first use (~60 ms): commands that redact nothing skip it
        use_engine(_WANTED)
    hits, starts = _engine[0][1](data)
    if not data.isascii() and _FOLDS_TO_ASCII_UTF8.search(data):
        # The probes are caseless for ASCII only, but the rules' `(?i)` also takes these
        # letters for ASCII ones (`ſecret=`): probe a copy spelled in ASCII for the rules too
        # (its byte offsets differ, so the runs' starts stay those of `data`).
        hits |= _engine[0][1](_FOLDS_TO_ASCII_UTF8.sub(_ascii_fold, data))[0]
    return hits, starts


# The only non-ASCII characters that `(?i)` matches to an ASCII letter (İ ı ſ and the Kelvin
# sign; found by trying every code point), in UTF-8, with the ASCII letter each stands for.
_ASCII_FOLDS = {"\u0130": b"I", "\u0131": b"i", "\u017f": b"s", "\u212a": b"K"}
_FOLDS_TO_ASCII_UTF8 = re.compile(b"|".join(c.encode() for c in _ASCII_FOLDS))
_FOLDED = {c.encode(): ascii_letter for c, ascii_letter in _ASCII_FOLDS.items()}


def _ascii_fold(m: re.Match[bytes]) -> bytes:
    return _FOLDED[m.group()]


def probe_rules(data: bytes) -> set[int]:
    """The rule indexes of probe(data)."""
    return probe(data)[0]


# Rules whose every match starts on one of these words (any case): on ASCII text they are
# tried only where a word starts, found with str.find, instead of at every position (a regex
# opening on a case-blind alternation gets no fast skip from `re`).
_START_WORDS = {
    "high-entropy-secret": (
        "key",
        "token",
        "secret",
        "passw",
        "auth",
        "credential",
        "signature",
        "salt",
    ),
}


# Text without one of the letters of _ASCII_FOLDS can match a rule's words only where its
# lowercase spells them.
_FOLDS_TO_ASCII = re.compile(f"[{''.join(_ASCII_FOLDS)}]")


def _matches(pattern: re.Pattern[str], kind: str, text: str) -> Iterator[re.Match[str]]:
    """pattern.finditer(text), for a rule of _START_WORDS tried only where its words start."""
    words = _START_WORDS.get(kind)
    if words is None:
        yield from pattern.finditer(text)
        return
    lower = text.lower()
    # A lowercase of another length (İ becomes two characters) would misplace the starts.
    if not text.isascii() and (len(lower) != len(text) or _FOLDS_TO_ASCII.search(text)):
        yield from pattern.finditer(text)  # a case-blind alternation is tried everywhere
        return
    starts: set[int] = set()
    for word in words:
        i = lower.find(word)
        while i >= 0:
            starts.add(i)
            i = lower.find(word, i + 1)
    end = 0
    for start in sorted(starts):
        if start >= end and (m := pattern.match(text, start)) is not None:
            end = max(m.end(), start + 1)
            yield m


def find_secrets(text: str, hits: set[int] | None = None) -> list[tuple[int, int, str]]:
    """(start, end, kind) of every secret the rules find in text, in no particular order.
    `hits`, when the caller has them, are probe_rules of text's UTF-8."""
    if hits is None:
        hits = probe_rules(text.encode("utf-8", "surrogatepass"))
    if not hits:
        return []
    found: list[tuple[int, int, str]] = []
    for i in sorted(hits - {HIDDEN, LEGACY}):
        rule = RULES[i]
        for m in _matches(rule.pattern, rule.kind, text):
            group = next((g for g in _SECRET_GROUPS if g in m.re.groupindex and m.group(g)), None)
            start, end = m.span(group) if group else m.span()
            value = text[start:end]
            if start == end or is_placeholder(value):
                continue
            if rule.check is not None and not rule.check(value):
                continue
            found.append((start, end, rule.kind))
    return found
