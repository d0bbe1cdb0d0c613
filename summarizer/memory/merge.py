"""The memory fold: applies observations, in entry order, to the memory rows they touch."""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import astuple
from typing import Any, TypeVar

from indexer import SummarizerConfig, history, index_memory
from summarizer.common import text as tx
from summarizer.common.acks import note_ack
from summarizer.common.neutralize import NEUTRALIZED_META
from summarizer.memory import extract as ex
from summarizer.memory.failure_fold import FailureFolding
from summarizer.memory.rank import rank_key, source_weight
from summarizer.memory.search_docs import memory_docs
from summarizer.memory.supersede import SupersedeFolding, chosen_and_rejected
from summarizer.memory.tables import (
    TABLES,
    ConstraintRow,
    DecisionRow,
    FailureRow,
    columns,
    select_list,
)

ACK_NOTE = re.compile(r' \(then: "[^"]*"\)$')

R = TypeVar("R")


def with_ack(request: str, ack: str) -> str:
    """The request with the acknowledgement that came after it noted (the latest one only)."""
    return note_ack(ACK_NOTE.sub("", request), ack)


def _merge_sources(sources: str, source: str) -> str:
    parts = set(sources.split(",")) if sources else set()
    parts.add(source)
    return ",".join(sorted(parts))


class MemoryFold(FailureFolding, SupersedeFolding):
    """The touched rows of one batch; `flush()` writes them back with the carried state."""

    def __init__(self, conn: sqlite3.Connection, cfg: SummarizerConfig) -> None:
        self.conn = conn
        self.cfg = cfg
        self.rows: dict[str, dict[str, Any]] = {name: {} for name in TABLES}
        self._missing: dict[str, set[str]] = {name: set() for name in TABLES}
        self._by_cmd: dict[str, set[str]] = {}
        self._by_target: dict[str, set[str]] = {}
        self._keys_loaded: set[str] = set()
        self._last_failure: dict[str, tuple[str, int]] = {}
        self._new_terms: list[tuple[str, str]] = []
        self._new_decision_terms: list[tuple[str, str]] = []
        self.features: dict[str, dict[str, Any]] = {}
        self.files: dict[str, list[Any]] = {}
        self.sessions: dict[str, dict[str, Any]] = {}
        self.current_feature = history.get_meta(conn, "mem.current_feature", "")
        self.last_session = history.get_meta(conn, "mem.last_session", "")
        self.last_ns = int(history.get_meta(conn, "mem.last_ns", "0") or 0)
        self.new_decisions = 0
        self.new_failures = 0
        self.neutralized = 0  # passages of recorded text that addressed the model, left out

    # --- row cache ---------------------------------------------------------------------------

    def _get(self, table: str, key: str) -> Any:
        cache = self.rows[table]
        if key in cache:
            return cache[key]
        if key in self._missing[table]:
            return None
        row_type, pk = TABLES[table]
        found = self.conn.execute(
            f"SELECT {select_list(self.conn, row_type, table)} FROM {table} WHERE {pk}=?", (key,)
        ).fetchone()
        if found is None:
            self._missing[table].add(key)
            return None
        return self._put(table, row_type(*found))

    def _put(self, table: str, row: R) -> R:
        key = getattr(row, TABLES[table][1])
        self.rows[table][key] = row
        self._missing[table].discard(key)
        if isinstance(row, FailureRow):
            self._by_cmd.setdefault(row.cmd_key, set()).add(row.signature)
            if row.target_key:
                self._by_target.setdefault(row.target_key, set()).add(row.signature)
        return row

    # --- observations ------------------------------------------------------------------------

    def apply(self, o: ex.Observation) -> None:
        """Apply one observation (observations must arrive in entry order)."""
        at = o.at
        self.last_ns = max(self.last_ns, at.ts_ns)
        if isinstance(o, ex.DecisionObs):
            self._decision(o)
        elif isinstance(o, ex.FailureObs):
            self._failure(o)
        elif isinstance(o, ex.SuccessObs):
            self._success(o)
        elif isinstance(o, ex.ConstraintObs):
            self._constraint(o)
        elif isinstance(o, ex.RevokeObs):
            self._revoke(o)
        elif isinstance(o, ex.GiveUpObs):
            self._retire_given_up(o.rejected, at.entry_id, at.ts_ns, "")
        elif isinstance(o, ex.NeutralizedObs):
            self.neutralized += o.count
        elif isinstance(o, ex.FeatureObs):
            self._feature(o)
        elif isinstance(o, ex.EditObs):
            row = self.files.get(o.path) or self._load_file(o.path)
            row[0] += 1
            row[1], row[2], row[3] = at.ts_ns, at.entry_id, at.session_id
        elif isinstance(o, ex.TodoObs):
            self._todos(o)
        elif isinstance(o, ex.SessionTextObs):
            session = self._session(at.session_id)
            if o.field == "ack":
                session["prompt"] = with_ack(session["prompt"], o.text)
            else:
                session[o.field] = o.text

    def note_entry(self, session_id: str, hook_event: str) -> None:
        """Remember the latest session with Claude Code activity (not only explicit events)."""
        if hook_event != "CtxdEmit":
            self.last_session = session_id

    def _decision(self, o: ex.DecisionObs) -> None:
        at = o.at
        row: DecisionRow | None = self._get("mem_decisions", o.key)
        if row is None:
            self.new_decisions += 1
            feature = o.feature_id or self.current_feature
            row = DecisionRow(
                o.key,
                o.text,
                feature,
                o.source,
                at.session_id,
                at.agent_id,
                at.ts_ns,
                at.ts_ns,
                0,
                at.entry_id,
                at.entry_id,
            )
            self._put("mem_decisions", row)
        row.count += 1
        row.sources = _merge_sources(row.sources, o.source)
        row.last_ns = max(row.last_ns, at.ts_ns)
        row.last_entry_id = at.entry_id
        row.session_id, row.agent_id = at.session_id, at.agent_id
        row.feature_id = row.feature_id or o.feature_id or self.current_feature
        row.retired_ns, row.retired_by = 0, ""  # stated (again): in force
        chosen, rejected = chosen_and_rejected(o.text)
        self._new_decision_terms += [(t, o.key) for t in chosen]
        self._retire_given_up(rejected, at.entry_id, at.ts_ns, o.key)

    def _constraint(self, o: ex.ConstraintObs) -> None:
        at = o.at
        row: ConstraintRow | None = self._get("mem_constraints", o.key)
        if row is None:
            row = ConstraintRow(
                o.key, "", o.source, o.feature_id or self.current_feature, at.session_id,
                1, 0, "", "", at.ts_ns, at.ts_ns, 0, at.entry_id, at.entry_id,
            )  # fmt: skip
            self._put("mem_constraints", row)
        # A restatement (same key) keeps the rule active and its latest wording.
        obj = tx.rule_object(o.text, o.head)
        row.description, row.negative = o.text, int(o.negative)
        row.head, row.object = " ".join(o.head), " ".join(sorted(obj))
        self._new_terms += [(t, o.key) for t in obj]
        if o.head:
            self._new_terms.append(("head:" + row.head, o.key))
        row.active, row.revoked_ns = 1, 0
        row.last_ns, row.last_entry_id = max(row.last_ns, at.ts_ns), at.entry_id
        row.session_id = at.session_id
        if o.source == "explicit":
            row.source = "explicit"

    def _revoke(self, o: ex.RevokeObs) -> None:
        if o.target:
            key = o.target if self._get("mem_constraints", o.target) else tx.text_key(o.target)
            candidates = [key]
        elif o.is_rule:
            candidates = self._candidates(["head:" + " ".join(o.head)]) if o.head else []
        else:
            candidates = self._candidates(sorted(o.terms))
        for key in candidates:
            row: ConstraintRow | None = self._get("mem_constraints", key)
            if row is None or not row.active or row.last_entry_id >= o.at.entry_id:
                continue
            head = tuple(row.head.split())
            if o.target or ex.revokes(o, row.description, bool(row.negative), head):
                row.active, row.revoked_ns = 0, o.at.ts_ns

    def _candidates(self, terms: list[str]) -> list[str]:
        if not terms:
            return []
        found: set[str] = {k for t, k in self._new_terms if t in terms}
        for i in range(0, len(terms), 500):
            chunk = terms[i : i + 500]
            marks = ",".join("?" * len(chunk))
            found.update(
                r[0]
                for r in self.conn.execute(
                    f"SELECT id FROM mem_constraint_terms WHERE term IN ({marks})", chunk
                )
            )
        return sorted(found)

    def _feature(self, o: ex.FeatureObs) -> None:
        at = o.at
        row = self.features.get(o.feature_id) or self._load_feature(o.feature_id, at)
        for key, value in (("name", o.name), ("category", o.category), ("status", o.status)):
            if value:
                row[key] = value
        row["started_at"] = o.started_at or row["started_at"]
        row["completed_at"] = o.completed_at if not o.is_start else 0
        row["last_entry_id"], row["session_id"] = at.entry_id, at.session_id
        if o.is_start:
            self.current_feature = o.feature_id
        elif self.current_feature == o.feature_id:
            self.current_feature = ""

    def _load_feature(self, feature_id: str, at: ex.Where) -> dict[str, Any]:
        cols = (
            "id",
            "name",
            "category",
            "status",
            "started_at",
            "completed_at",
            "session_id",
            "first_entry_id",
            "last_entry_id",
        )
        found = self.conn.execute(
            f"SELECT {', '.join(cols)} FROM mem_features WHERE id=?", (feature_id,)
        ).fetchone()
        values = found or (feature_id, "", "", "", 0, 0, at.session_id, at.entry_id, at.entry_id)
        self.features[feature_id] = dict(zip(cols, values, strict=True))
        return self.features[feature_id]

    def _load_file(self, path: str) -> list[Any]:
        found = self.conn.execute(
            "SELECT edits, last_ns, last_entry_id, session_id FROM mem_files WHERE path=?", (path,)
        ).fetchone()
        self.files[path] = list(found) if found else [0, 0, 0, ""]
        return self.files[path]

    def _session(self, session_id: str) -> dict[str, Any]:
        row = self.sessions.get(session_id)
        if row is None:
            found = self.conn.execute(
                "SELECT todos, prompt, report, compact FROM mem_sessions WHERE session_id=?",
                (session_id,),
            ).fetchone()
            todos, prompt, report, compact = found or ("[]", "", "", "")
            row = {
                "todos": json.loads(todos),
                "prompt": prompt,
                "report": report,
                "compact": compact,
            }
            self.sessions[session_id] = row
        return row

    def _todos(self, o: ex.TodoObs) -> None:
        row = self._session(o.at.session_id)
        todos: list[list[str]] = row["todos"]
        if o.op == "replace":
            row["todos"] = [list(item) for item in o.items]
            return
        for task_id, subject, status in o.items:
            match = next((t for t in todos if task_id and t[0] == task_id), None)
            if match is None:
                todos.append([task_id, subject, status or "pending"])
                continue
            match[1] = subject or match[1]
            match[2] = status or match[2]
        row["todos"] = [t for t in todos if t[2] != "deleted"][-50:]

    # --- write back --------------------------------------------------------------------------

    def flush(self, watermark: int) -> None:
        """Write every touched row and the carried state (inside the caller's transaction)."""
        cfg = self.cfg
        for table, (row_type, _pk) in TABLES.items():
            rows = list(self.rows[table].values())
            for row in rows:
                if isinstance(row, DecisionRow | FailureRow):
                    weight = source_weight(row.sources.split(","), cfg)
                    row.rank_key = rank_key(row.last_ns, row.count, weight, cfg.recency_half_life_h)
            cols = columns(row_type)
            marks = ",".join("?" * len(cols))
            self.conn.executemany(
                f"INSERT OR REPLACE INTO {table}({', '.join(cols)}) VALUES ({marks})",
                [astuple(r) for r in rows],
            )
            index_memory(self.conn, memory_docs(rows))
        self.conn.executemany(
            "INSERT OR IGNORE INTO mem_constraint_terms(term, id) VALUES (?, ?)", self._new_terms
        )
        self.conn.executemany(
            "INSERT OR IGNORE INTO mem_decision_terms(term, id) VALUES (?, ?)",
            self._new_decision_terms,
        )
        self.conn.executemany(
            "INSERT OR REPLACE INTO mem_features(id, name, category, status, started_at,"
            " completed_at, session_id, first_entry_id, last_entry_id) VALUES (?,?,?,?,?,?,?,?,?)",
            [tuple(f.values()) for f in self.features.values()],
        )
        self.conn.executemany(
            "INSERT OR REPLACE INTO mem_files(path, edits, last_ns, last_entry_id, session_id)"
            " VALUES (?,?,?,?,?)",
            [(path, *row) for path, row in self.files.items()],
        )
        self.conn.executemany(
            "INSERT OR REPLACE INTO mem_sessions(session_id, todos, prompt, report, compact)"
            " VALUES (?,?,?,?,?)",
            [
                (
                    sid,
                    json.dumps(r["todos"], ensure_ascii=False),
                    r["prompt"],
                    r["report"],
                    r["compact"],
                )
                for sid, r in self.sessions.items()
            ],
        )
        if self.neutralized:
            total = int(history.get_meta(self.conn, NEUTRALIZED_META, "0") or 0)
            history.set_meta(self.conn, NEUTRALIZED_META, str(total + self.neutralized))
        for key, value in (
            ("mem.watermark", str(watermark)),
            ("mem.current_feature", self.current_feature),
            ("mem.last_session", self.last_session),
            ("mem.last_ns", str(self.last_ns)),
        ):
            history.set_meta(self.conn, key, value)
