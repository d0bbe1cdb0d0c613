"""Redaction of secrets and `<private>` spans in decoded form: text, raw JSON detail, entries."""

from __future__ import annotations

import json
import operator
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from indexer.redact.decoded import (
    base64_blobs,
    base64_run_spans,
    base64_texts,
    decode_base64,
    unescape,
)
from indexer.redact.raw import may_contain_secret, redact_bytes
from indexer.redact.scan import HIDDEN, LEGACY, find_secrets, probe

if TYPE_CHECKING:  # the module stays stdlib-only at run time
    from indexer.models import Entry


def _utf8(text: str) -> bytes:
    """text as UTF-8, lone surrogates kept (tool output can carry them)."""
    return text.encode("utf-8", "surrogatepass")


def _redact_plain(text: str) -> str:
    """redact_bytes for a str: the same rules, applied to its JSON string encoding."""
    # The prefilter on the raw text fires whenever it would on the encoding (which only adds
    # backslashes before `"` and `\`, and turns raw whitespace into escapes): sound and cheap.
    if not may_contain_secret(_utf8(text)):
        return text
    encoded = _utf8(json.dumps(text, ensure_ascii=False))
    redacted = redact_bytes(encoded)
    if redacted is encoded:
        return text
    result: str = json.loads(redacted.decode("utf-8", "surrogatepass"))
    return result


_BASE64_DEPTH = 2  # base64 inside base64 inside text: deeper nesting is not realistic


def _apply_spans(text: str, spans: list[tuple[int, int, str]]) -> str:
    """text with each (start, end, kind) replaced by its tag; overlapping spans merge."""
    spans.sort(key=lambda s: (s[0], -s[1]))
    out: list[str] = []
    last = 0
    for start, end, kind in spans:
        if start < last:
            last = max(last, end)
            continue
        out += (text[last:start], f"[REDACTED:{kind}]")
        last = end
    out.append(text[last:])
    return "".join(out)


def _redact_layer(text: str, hits: set[int] | None = None) -> str:
    """Every rule on text as it stands (no decoding); `hits`, when given, is probe(text)'s."""
    if hits is None:
        out = _redact_plain(text)
        spans = find_secrets(out)
    else:
        # The probe already ran on text: without a legacy gate's hit the earlier rules find
        # nothing, and while text is unchanged its rule hits stand (no second probe).
        out = _redact_plain(text) if LEGACY in hits else text
        spans = find_secrets(out, hits if out is text else None)
    return _apply_spans(out, spans) if spans else out


def _redact_decoded(text: str, depth: int) -> str:
    data = _utf8(text)
    hits, runs = probe(data)  # one pass tells which steps can change anything
    out = text
    if hits:
        out = _redact_layer(text, hits)
        if HIDDEN in hits:
            decoded = unescape(out)
            # A secret visible only once decoded: the decoded, redacted text is what is kept.
            if decoded != out and (redacted := _redact_layer(decoded)) != decoded:
                out = redacted
    if depth > 0 and runs:
        spans: list[tuple[int, int, str]] = []
        # The probe's run starts locate the blobs of `out` when nothing was redacted.
        blobs = base64_run_spans(text, data, runs) if out is text else base64_blobs(out)
        for start, end in blobs:
            inner = decode_base64(out[start:end])
            # Text hidden in base64 goes whole when any rule may match it: a blob clipped
            # with its text may have lost the end of the key that a rule needs.
            if inner is not None and _may_need_redaction(_utf8(inner), depth - 1):
                spans.append((start, end, "base64-secret"))
        if spans:
            out = _apply_spans(out, spans)
    return out


def redact_text(text: str) -> str:
    """text with every secret redacted in its final decoded form: JSON and URL escapes are
    decoded, and base64 blobs long enough to hide a key are decoded, before the rules run.
    The same object comes back when nothing was redacted."""
    if not text:  # most entries leave most fields empty
        return text
    if len(text) > _CACHED_TEXT_CHARS:
        out = _redact_decoded(text, _BASE64_DEPTH)
        return text if out == text else out
    known = _TEXTS.get(text, _UNKNOWN)
    if known is _UNKNOWN:
        out = _redact_decoded(text, _BASE64_DEPTH)
        known = None if out == text else out
        _remember(text, known)
    return text if known is None else known


_TAG = re.compile(r"\[REDACTED:([a-z0-9-]+)\]")


def secret_kinds(text: str) -> list[str]:
    """The kinds of secret redact_text finds in text, sorted ([] when it would change nothing):
    the check of what ctxd refuses to store rather than stores redacted (the task cache)."""
    redacted = redact_text(text)
    if redacted is text:
        return []
    found = Counter(_TAG.findall(redacted))
    found.subtract(_TAG.findall(text))  # tags the text held already are not new secrets
    return sorted(kind for kind, n in found.items() if n > 0) or ["secret"]


def _remember(text: str, redacted: str | None) -> None:
    """Keep a short text's redaction (None: nothing to redact) in the bounded table."""
    if len(text) <= _CACHED_TEXT_CHARS:
        if len(_TEXTS) >= _CACHED_TEXTS:
            _TEXTS.clear()
        _TEXTS[text] = redacted


# Short texts repeat from event to event (a session's cwd, file paths, tool names, the strings
# of a detail): their redaction, a pure function of the text, is remembered in a small bounded
# table (None: nothing to redact, so the caller gets its own object back).
_TEXTS: dict[str, str | None] = {}
_CACHED_TEXTS = 4096
_CACHED_TEXT_CHARS = 64
_UNKNOWN = ""  # never stored: empty texts return before the table


def _may_need_redaction(data: bytes, depth: int = _BASE64_DEPTH) -> bool:
    """The prefilter: False when no rule can match data in any decoded form (most events)."""
    hits, runs = probe(data)  # the earlier rules' gates are in the same pass (LEGACY)
    if hits:
        return True
    if depth > 0:
        for inner in base64_texts(data, runs):
            if _may_need_redaction(_utf8(inner), depth - 1):
                return True
    return False


# Member names repeat from event to event ("command", "file_path"): their redaction, a pure
# function of the name, is remembered in a small bounded table (short names only).
_KEYS: dict[str, str] = {}
_CACHED_KEYS = 4096
_CACHED_KEY_CHARS = 64


def _redact_key(key: str) -> str:
    out = _KEYS.get(key)
    if out is None:
        out = redact_text(key)
        if len(key) <= _CACHED_KEY_CHARS:
            if len(_KEYS) >= _CACHED_KEYS:
                _KEYS.clear()
            _KEYS[key] = out
    return out


def _redact_json(value: Any) -> Any:
    """value (decoded JSON) with every string redacted; the same object when unchanged."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list):
        items = [_redact_json(v) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, dict):
        pairs = {_redact_key(k): _redact_json(v) for k, v in value.items()}
        same = len(pairs) == len(value) and all(
            k in value and value[k] is v for k, v in pairs.items()
        )
        return value if same else pairs
    return value


def redact_detail(raw: bytes) -> bytes:
    """Raw JSON with every string redacted in decoded form, then the JSON-member rules
    (`"password": "…"`) on the result; the same object when nothing was redacted."""
    try:
        value = json.loads(raw)
    except ValueError:
        return redact_bytes(raw)
    redacted = _redact_json(value)
    if redacted is not value:
        try:
            raw = json.dumps(redacted, ensure_ascii=False, separators=(",", ":")).encode()
        except UnicodeEncodeError:  # a lone surrogate: keep it escaped
            raw = json.dumps(redacted, separators=(",", ":")).encode()
    return redact_bytes(raw)


# agent_type is the Agent call's `subagent_type`, text the model writes like any other.
_ENTRY_TEXT = (
    "description", "instruction", "output_summary", "error", "text", "cwd", "agent_type"
)  # fmt: skip


_entry_texts = operator.attrgetter(*_ENTRY_TEXT)  # one call for the seven fields


def redact_entry(entry: Entry) -> Entry:
    """entry with free text, files and raw detail redacted (ids kept); same object if unchanged.

    One prefilter pass over every stored field (decoded text, and the raw detail) decides
    whether any rule can match in any decoded form; only then is each field redacted.
    """
    detail = bytes(entry.detail)
    # Fields known to need nothing (a session's cwd, paths seen before) stay out of the pass:
    # the probe has no anchors, so a field alone can only match where it matches among others.
    known = _TEXTS.get  # None: remembered as having nothing to redact
    texts = [t for t in _entry_texts(entry) if t and known(t, _UNKNOWN) is not None]
    texts.extend(f for f in entry.files if known(f, _UNKNOWN) is not None)
    if not texts and not detail:
        return entry
    every_field = _utf8("\n".join(texts)) + b"\n" + detail
    if not _may_need_redaction(every_field):
        for text in texts:  # each one alone needs nothing either: remembered as such
            _remember(text, None)
        return entry
    changes: dict[str, Any] = {}
    for name in _ENTRY_TEXT:
        if (new := redact_text(value := getattr(entry, name))) is not value:
            changes[name] = new
    if (files := tuple(redact_text(f) for f in entry.files)) != entry.files:
        changes["files"] = files
    # The detail's own prefilter: a hit in a text field alone (a third of the entries that
    # get here) no longer costs the walk over every string of the detail.
    if detail and _may_need_redaction(detail) and (raw := redact_detail(detail)) is not detail:
        changes["detail"] = type(entry.detail)(raw)  # msgspec.Raw, without importing it
    if not changes:
        return entry
    return type(entry)(**{f: getattr(entry, f) for f in entry.__struct_fields__} | changes)
