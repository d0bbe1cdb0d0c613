"""json.loads and JSON string encoding for the hook's hot path, without importing json."""

# `import json` pulls in `re` and costs the SessionStart hook ~10 ms, most of an interpreter
# start. The C accelerator `_json` that json itself uses needs neither: its scanner parses,
# its encoder escapes. Where `_json` is missing (not CPython), the json module is used.

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["encode_string", "loads"]


def loads(data: bytes | str) -> Any:
    """json.loads without importing json (whose `re` costs the hook ~10 ms): the C scanner
    that json itself uses, from `_json`; json.loads where `_json` is missing."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    scan = _scanner()
    if scan is None:
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(" \t\n\r"))
    try:
        value, end = scan(text, start)
    except StopIteration as e:
        raise ValueError(f"invalid JSON at character {e.value}") from None
    except SystemError:
        # _json builds its error from json.decoder found in sys.modules only; without json
        # imported, CPython 3.11 reports a decode error as this SystemError instead.
        raise ValueError("invalid JSON") from None
    if text[end:].strip(" \t\n\r"):
        raise ValueError(f"extra data after JSON at character {end}")
    return value


# --- private ---------------------------------------------------------------------------


class _ScanContext:
    # The attributes json.JSONDecoder gives the C scanner (CPython Modules/_json.c).
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # NaN, Infinity, -Infinity


_SCAN: list[Any] = []


def _scanner() -> Any:
    if not _SCAN:
        try:
            import _json

            context: Any = _ScanContext()  # duck-typed like json.JSONDecoder
            _SCAN.append(_json.make_scanner(context))
        except (ImportError, AttributeError, TypeError):
            _SCAN.append(None)
    return _SCAN[0]


def encode_string(text: str) -> str:
    """`text` as a JSON string literal, non-ASCII kept (json.dumps(text, ensure_ascii=False))."""
    try:
        import _json

        return str(_json.encode_basestring(text))
    except (ImportError, AttributeError):
        import json

        return json.dumps(text, ensure_ascii=False)
