"""Superseded memory: a later statement that gives up what an earlier one chose retires it.

A reversal says what it gives up: `use A instead of B`, `B rather than A`, `revert B`, `we no
longer use B`, `don't use B after all`, `switch back from B`, `ya no B`. An earlier decision
that chose B (B among its chosen terms, not among the ones it rejected itself), or an earlier
constraint about B (B among its object terms), is retired: it leaves the notes and stays in the
index, searchable. A statement that gives up nothing by name (`actually, go with Postgres`)
retires nothing: two choices about one subject can both hold.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from summarizer.common.text import key_terms

__all__ = ["chosen_and_rejected", "is_reversal"]

_GIVES_UP = re.compile(
    r"(?i)\b(?:instead of|rather than|en vez de|en lugar de|revert(?:ed|ing)?(?: the| to)?"
    r"|no longer(?: use| using| need)?|stop(?:ped)? using|drop(?:ped)?|switch(?:ed)? back from"
    r"|moved? away from|ya no(?: usamos| uses| usar)?|dej(?:a|ar|amos) de usar)\s+(.+)"
)
_AFTER_ALL = re.compile(r"(?i)\b(?:don'?t|do not|no)\s+(?:use|keep|need)?\s*(.+?)\s+after all\b")
_NOT_THAT = re.compile(r"(?i)\(not ([^)]+)\)")
_CLAUSE_END = re.compile(r"[.;:!?—,]|\s+-\s+|\b(?:because|since|so that|for)\b")
# Words too common to tell one subject from another.
_GENERIC = frozenset(
    {
        "use", "uses", "used", "using", "file", "files", "code", "data", "new", "old", "now",
        "later", "instead", "rather", "than", "way", "thing", "things", "one", "ones", "it", "them",
        "project", "app", "change", "changes",
    }
)


def is_reversal(text: str) -> bool:
    """Whether a statement gives something up by name."""
    return bool(_GIVES_UP.search(text) or _AFTER_ALL.search(text) or _NOT_THAT.search(text))


def chosen_and_rejected(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(what a statement chooses, what it gives up), as significant lower-case terms."""
    rejected_parts = []
    for m in _GIVES_UP.finditer(text):
        rejected_parts.append(_CLAUSE_END.split(m.group(1), maxsplit=1)[0])
    rejected_parts += [m.group(1) for m in _AFTER_ALL.finditer(text)]
    rejected_parts += [m.group(1) for m in _NOT_THAT.finditer(text)]
    rejected = _terms(" ".join(rejected_parts))
    chosen = _terms(text) - rejected
    return frozenset(chosen), frozenset(rejected)


def _terms(text: str) -> set[str]:
    return {t for t in key_terms(text) if t not in _GENERIC and not t.isdigit()}


class SupersedeFolding:
    """Mixed into MemoryFold: retires the decisions and constraints a new statement gives up."""

    conn: sqlite3.Connection
    rows: dict[str, dict[str, Any]]
    _new_terms: list[tuple[str, str]]
    _new_decision_terms: list[tuple[str, str]]

    def _get(self, table: str, key: str) -> Any:
        raise NotImplementedError

    def _candidates(self, terms: list[str]) -> list[str]:
        raise NotImplementedError

    def _retire_given_up(
        self, rejected: frozenset[str], entry_id: int, ts_ns: int, by: str
    ) -> None:
        """Retire earlier decisions that chose, and constraints about, what `rejected` names."""
        if not rejected:
            return
        for key in self._decision_candidates(sorted(rejected)):
            row = self._get("mem_decisions", key)
            if row is None or row.retired_ns or row.last_entry_id >= entry_id or key == by:
                continue
            chosen, _ = chosen_and_rejected(row.decision)
            if chosen & rejected:
                row.retired_ns, row.retired_by = ts_ns, by
        for key in self._candidates(sorted(rejected)):
            crow = self._get("mem_constraints", key)
            if crow is None or not crow.active or crow.last_entry_id >= entry_id or key == by:
                continue
            if set(crow.object.split()) & rejected:
                crow.active, crow.revoked_ns = 0, ts_ns

    def _decision_candidates(self, terms: list[str]) -> list[str]:
        found: set[str] = {k for t, k in self._new_decision_terms if t in terms}
        for i in range(0, len(terms), 500):
            chunk = terms[i : i + 500]
            marks = ",".join("?" * len(chunk))
            found.update(
                r[0]
                for r in self.conn.execute(
                    f"SELECT id FROM mem_decision_terms WHERE term IN ({marks})", chunk
                )
            )
        return sorted(found)
