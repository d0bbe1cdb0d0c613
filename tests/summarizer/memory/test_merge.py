"""summarizer/memory/merge.py: the fold of observations into memory rows, and its write-back."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from indexer.config import SummarizerConfig
from indexer.index import store
from indexer.index.transactions import transaction
from summarizer.memory.merge import MemoryFold
from summarizer.memory.observations import (
    ConstraintObs,
    DecisionObs,
    EditObs,
    FailureObs,
    FeatureObs,
    RevokeObs,
    SessionTextObs,
    SuccessObs,
    TodoObs,
    Where,
)
from summarizer.memory.store import ensure_schema

CFG = SummarizerConfig()


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    c = store.connect(tmp_path / "index.db")
    ensure_schema(c, CFG)
    yield c
    c.close()


def at(entry_id: int, session: str = "s1", agent: str = "main") -> Where:
    return Where(entry_id, entry_id * 1000, session, agent)


def decision(entry_id: int, source: str = "explicit", feature: str = "") -> DecisionObs:
    return DecisionObs("use-wal", "Use WAL mode", source, feature, at(entry_id))


def failure(entry_id: int, prevention: str = "", resolved: bool = False) -> FailureObs:
    return FailureObs(
        "sig-pytest", "Bash\x1fpytest", "Bash", "pytest", "AssertionError",
        "assert 1 == 2", "pytest fails", "tool", "", prevention, resolved, at(entry_id),
    )  # fmt: skip


def _flush(fold: MemoryFold, watermark: int) -> None:
    with transaction(fold.conn):
        fold.flush(watermark)


def _one(conn: sqlite3.Connection, sql: str) -> tuple[object, ...]:
    row = conn.execute(sql).fetchone()
    assert row is not None
    return tuple(row)


def test_a_repeated_decision_is_one_row_counted_twice(conn: sqlite3.Connection) -> None:
    fold = MemoryFold(conn, CFG)
    fold.apply(decision(3, "user_prompt"))
    fold.apply(decision(7, "explicit"))
    assert fold.new_decisions == 1
    _flush(fold, 7)
    assert _one(
        conn,
        "SELECT decision, sources, count, first_ns, last_ns, entry_id, last_entry_id"
        " FROM mem_decisions",
    ) == ("Use WAL mode", "explicit,user_prompt", 2, 3000, 7000, 3, 7)
    assert _one(conn, "SELECT rank_key FROM mem_decisions")[0] != 0.0
    assert store.get_meta(conn, "mem.watermark") == "7"
    assert store.get_meta(conn, "mem.last_ns") == "7000"


def test_a_later_fold_continues_from_the_stored_rows(conn: sqlite3.Connection) -> None:
    first = MemoryFold(conn, CFG)
    first.apply(decision(1))
    _flush(first, 1)
    second = MemoryFold(conn, CFG)
    second.apply(decision(5, "stop"))
    assert second.new_decisions == 0
    _flush(second, 5)
    assert _one(conn, "SELECT count, sources, first_ns FROM mem_decisions") == (
        2,
        "explicit,stop",
        1000,
    )


def test_a_failure_is_resolved_by_a_later_success_of_the_same_command(
    conn: sqlite3.Connection,
) -> None:
    fold = MemoryFold(conn, CFG)
    fold.apply(failure(2))
    fold.apply(failure(4))
    fold.apply(SuccessObs("Bash\x1fother", "other passed", at(5)))  # another command
    assert fold.new_failures == 1
    _flush(fold, 5)
    assert _one(conn, "SELECT count, resolved_ns FROM mem_failures") == (2, 0)
    later = MemoryFold(conn, CFG)  # the success comes in a later batch: read back from SQLite
    later.apply(SuccessObs("Bash\x1fpytest", "the tests passed", at(9)))
    _flush(later, 9)
    assert _one(conn, "SELECT resolved_ns, resolved_entry_id FROM mem_failures") == (9000, 9)


def test_an_explicit_prevention_is_kept_when_resolved(conn: sqlite3.Connection) -> None:
    fold = MemoryFold(conn, CFG)
    fold.apply(failure(2, prevention="Pin pytest to 8.x"))
    fold.apply(SuccessObs("Bash\x1fpytest", "the tests passed", at(3)))
    _flush(fold, 3)
    assert _one(conn, "SELECT prevention, explicit_prevention, resolved_entry_id FROM mem_failures") == (
        "Pin pytest to 8.x",
        1,
        3,
    )  # fmt: skip


def test_a_success_before_the_failure_does_not_resolve_it(conn: sqlite3.Connection) -> None:
    fold = MemoryFold(conn, CFG)
    fold.apply(failure(6))
    fold.apply(SuccessObs("Bash\x1fpytest", "the tests passed", at(6)))  # same entry, not later
    _flush(fold, 6)
    assert _one(conn, "SELECT resolved_ns FROM mem_failures") == (0,)


def test_features_scope_decisions_while_they_run(conn: sqlite3.Connection) -> None:
    fold = MemoryFold(conn, CFG)
    fold.apply(FeatureObs("F1", "Export", "core", "", 111, 0, True, at(1)))
    fold.apply(DecisionObs("d1", "Stream rows", "explicit", "", at(2)))
    fold.apply(FeatureObs("F1", "", "", "completed", 0, 222, False, at(3)))
    fold.apply(DecisionObs("d2", "Keep CSV", "explicit", "", at(4)))
    assert fold.current_feature == ""
    _flush(fold, 4)
    assert conn.execute("SELECT id, feature_id FROM mem_decisions ORDER BY id").fetchall() == [
        ("d1", "F1"),
        ("d2", ""),
    ]
    assert _one(
        conn, "SELECT name, category, status, started_at, completed_at FROM mem_features"
    ) == ("Export", "core", "completed", 111, 222)
    assert store.get_meta(conn, "mem.current_feature") == ""


def test_a_constraint_is_restated_then_revoked(conn: sqlite3.Connection) -> None:
    fold = MemoryFold(conn, CFG)
    fold.apply(ConstraintObs("c1", "Never push to main", "user_prompt", "", True,
                             ("push",), at(1)))  # fmt: skip
    fold.apply(ConstraintObs("c1", "Never push to main directly", "explicit", "", True,
                             ("push",), at(2)))  # fmt: skip
    _flush(fold, 2)
    assert _one(conn, "SELECT description, source, active, negative FROM mem_constraints") == (
        "Never push to main directly",
        "explicit",
        1,
        1,
    )
    later = MemoryFold(conn, CFG)
    later.apply(RevokeObs("c1", frozenset(), False, (), False, at(5)))
    _flush(later, 5)
    assert _one(conn, "SELECT active, revoked_ns FROM mem_constraints") == (0, 5000)


def test_a_revocation_older_than_the_constraint_does_nothing(conn: sqlite3.Connection) -> None:
    fold = MemoryFold(conn, CFG)
    fold.apply(ConstraintObs("c1", "Never push to main", "explicit", "", True, ("push",), at(4)))
    fold.apply(RevokeObs("c1", frozenset(), False, (), False, at(4)))
    _flush(fold, 4)
    assert _one(conn, "SELECT active FROM mem_constraints") == (1,)


def test_edits_are_counted_per_file(conn: sqlite3.Connection) -> None:
    fold = MemoryFold(conn, CFG)
    fold.apply(EditObs("src/a.py", at(1)))
    fold.apply(EditObs("src/a.py", at(2, "s2")))
    fold.apply(EditObs("src/b.py", at(3)))
    _flush(fold, 3)
    assert conn.execute("SELECT * FROM mem_files ORDER BY path").fetchall() == [
        ("src/a.py", 2, 2000, 2, "s2"),
        ("src/b.py", 1, 3000, 3, "s1"),
    ]


def test_todos_replace_update_and_delete(conn: sqlite3.Connection) -> None:
    fold = MemoryFold(conn, CFG)
    fold.apply(TodoObs("replace", (("1", "Write docs", "pending"), ("2", "Ship", "pending")),
                       at(1)))  # fmt: skip
    fold.apply(TodoObs("update", (("1", "", "completed"),), at(2)))
    fold.apply(TodoObs("update", (("2", "", "deleted"),), at(3)))
    fold.apply(TodoObs("create", (("3", "Review", ""),), at(4)))
    fold.apply(SessionTextObs("prompt", "Build the export", at(4)))
    _flush(fold, 4)
    todos, prompt = _one(conn, "SELECT todos, prompt FROM mem_sessions WHERE session_id='s1'")
    assert json.loads(str(todos)) == [["1", "Write docs", "completed"], ["3", "Review", "pending"]]
    assert prompt == "Build the export"


def test_only_claude_code_activity_moves_the_last_session(conn: sqlite3.Connection) -> None:
    fold = MemoryFold(conn, CFG)
    fold.note_entry("s1", "Stop")
    fold.note_entry("ctxd-orchestrator", "CtxdEmit")
    _flush(fold, 2)
    assert store.get_meta(conn, "mem.last_session") == "s1"
