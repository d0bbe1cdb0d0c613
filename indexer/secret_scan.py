"""Find secrets in decoded text: one multi-pattern probe pass, then the rules it points at."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable

from indexer.secret_rules import RULES, is_placeholder

__all__ = ["ENGINE", "find_secrets", "probe_rules"]

_SECRET_GROUPS = ("s", "s2", "s3")


def _re_engine() -> Callable[[bytes], set[int]]:
    """Python `re` fallback: one alternation of every probe, one named group per rule."""
    alternation = re.compile(
        "|".join(f"(?P<r{i}>{'|'.join(rule.probes)})" for i, rule in enumerate(RULES)).encode(),
        re.IGNORECASE,
    )

    def probe(data: bytes) -> set[int]:
        return {int(m.lastgroup[1:]) for m in alternation.finditer(data) if m.lastgroup}

    return probe


def _hyperscan_engine() -> Callable[[bytes], set[int]]:
    """Hyperscan: all probes in one database, one pass over the bytes whatever their number."""
    import hyperscan

    expressions, ids = [], []
    for i, rule in enumerate(RULES):
        for p in rule.probes:
            expressions.append(p.encode())
            ids.append(i)
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    flags = hyperscan.HS_FLAG_CASELESS | hyperscan.HS_FLAG_SINGLEMATCH
    db.compile(expressions=expressions, ids=ids, elements=len(ids), flags=[flags] * len(ids))
    lock = threading.Lock()  # one scratch space per database: scans may not overlap

    def probe(data: bytes) -> set[int]:
        hits: set[int] = set()

        def on_match(rule_id: int, _from: int, _to: int, _flags: int, _ctx: object) -> None:
            hits.add(rule_id)

        with lock:
            db.scan(data, match_event_handler=on_match)
        return hits

    return probe


def _pick_engine() -> tuple[str, Callable[[bytes], set[int]]]:
    # CTXD_REDACT_ENGINE=re forces the fallback (the benchmark compares both).
    if os.environ.get("CTXD_REDACT_ENGINE") != "re":
        try:
            return "hyperscan", _hyperscan_engine()
        except ImportError:  # a platform without a hyperscan wheel: same rules, slower probe
            pass
    return "re", _re_engine()


ENGINE, probe_rules = _pick_engine()


def find_secrets(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of every secret the rules find in text, in no particular order."""
    data = text.encode("utf-8", "surrogatepass")
    hits = probe_rules(data)
    if not hits:
        return []
    found: list[tuple[int, int, str]] = []
    for i in sorted(hits):
        rule = RULES[i]
        for m in rule.pattern.finditer(text):
            group = next((g for g in _SECRET_GROUPS if g in m.re.groupindex and m.group(g)), None)
            start, end = m.span(group) if group else m.span()
            value = text[start:end]
            if start == end or is_placeholder(value):
                continue
            if rule.check is not None and not rule.check(value):
                continue
            found.append((start, end, rule.kind))
    return found
