"""The few config.toml keys the SessionStart hook needs, read without importing tomllib."""

# tomllib costs ~13 ms to import (typing, re, datetime): as much as the whole interpreter start
# the hook is measured against. config.toml as `ctxd init` writes it is flat `key = value`
# lines, so a line reader covers it; anything it does not understand (multi-line strings,
# inline tables, escapes in a key it needs) falls back to tomllib, so the result is never
# wrong, only slower.

from __future__ import annotations

WANTED = {
    "resume": (
        "inject_on",
        "inject_on_startup",
        "build_timeout_s",
        "max_chars",
        "prebuild",
        "subagent_max_tokens",
    ),
    "daemon": ("autostart",),
}


def parse_settings(text: str) -> dict[str, dict[str, object]]:
    """The WANTED keys of a TOML document as {table: {key: value}}; raises ValueError if the
    document is not valid TOML (tomllib decides whenever the fast reader is unsure)."""
    fast = _fast(text)
    if fast is not None:
        return fast
    import tomllib

    doc = tomllib.loads(text)
    return {t: {k: v for k, v in doc.get(t, {}).items() if k in keys} for t, keys in WANTED.items()}


def _fast(text: str) -> dict[str, dict[str, object]] | None:
    if '"""' in text or "'''" in text:
        return None
    out: dict[str, dict[str, object]] = {t: {} for t in WANTED}
    table = ""
    pending = ""  # a wanted array value spread over several lines
    key = ""
    for raw in text.split("\n"):
        line = _strip_comment(raw).strip()
        if pending:
            pending += " " + line
            if not line.endswith("]"):
                continue
            line, pending = pending, ""
        elif not line:
            continue
        elif line.startswith("["):
            if line.startswith("[[") or not line.endswith("]"):
                return None
            table = line[1:-1].strip()
            continue
        else:
            key, sep, value = line.partition("=")
            key = key.strip()
            if not sep or not key.replace("_", "").isalnum():
                return None  # dotted or quoted keys, a stray line: let tomllib judge
            if key not in WANTED.get(table, ()):
                if value.strip().startswith(("[", "{")) and not value.strip().endswith(("]", "}")):
                    return None  # a multi-line value of another key
                continue
            line = value.strip()
            if line.startswith("[") and not line.endswith("]"):
                pending = line
                continue
        parsed = _value(line)
        if parsed is None:
            return None
        out[table][key] = parsed
    return None if pending else out


def _strip_comment(line: str) -> str:
    if "#" not in line:
        return line
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return line[:i]
    return line


def _value(text: str) -> object | None:
    if text in ("true", "false"):
        return text == "true"
    if text.startswith("[") and text.endswith("]"):
        items = [s.strip() for s in text[1:-1].split(",")]
        values = [_string(s) for s in items if s]
        return None if any(v is None for v in values) else values
    if text[:1] in "\"'":
        return _string(text)
    try:
        number = text.replace("_", "")
        return float(number) if any(c in number for c in ".eE") else int(number)
    except ValueError:
        return None


def _string(text: str) -> str | None:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        inner = text[1:-1]
        if "\\" not in inner and text[0] not in inner:
            return inner
    return None
