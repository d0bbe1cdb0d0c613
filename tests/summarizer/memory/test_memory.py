"""summarizer.memory.store: the golden demo session, incremental == one-shot, revocation, the corpus."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from helpers import CORPUS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memory_helpers import (
    PROJECT,
    base,
    bash,
    demo_paths,
    dump_memory,
    edit,
    emit_payload,
    prompt,
    replay,
    spool,
)

from indexer.config import SummarizerConfig
from indexer.index import store
from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up
from summarizer.cli.commands.demo_session import DEMO_SESSION_ID
from summarizer.memory import store as memory
from summarizer.memory.reader import load_memory
from summarizer.memory.store import compact


def _open(paths: StatePaths) -> sqlite3.Connection:
    return store.connect(paths.index_db)


# --- the golden session -------------------------------------------------------------------------


@pytest.fixture
def demo(tmp_path: Path) -> sqlite3.Connection:
    paths = demo_paths(tmp_path / "state")
    conn = _open(paths)
    stats = compact(conn)
    assert stats.entries == store.max_entry_id(conn) and stats.skipped == 0
    return conn


def test_golden_failure_once_with_count_and_prevention(demo: sqlite3.Connection) -> None:
    mem = load_memory(demo)
    assert len(mem.failures) == 1
    (f,) = mem.failures
    assert f.count == 3
    assert f.resolved
    assert f.tool == "Bash" and f.command == "python -m pytest -q tests/test_export.py"
    assert "test_header_row" in f.description
    assert f.prevention == (
        "After editing src/export.py (header = ['id', 'amount', 'total']) the command passed"
    )
    assert f.first_ns < f.last_ns < f.resolved_ns


def test_golden_decisions_are_the_sessions_own(demo: sqlite3.Connection) -> None:
    texts = sorted(d.decision for d in load_memory(demo).decisions)
    # The main agent's last message states two choices. The planner's and the tester's answers
    # ("Decision: stream rows …", "We decided to keep the header order …") are subagents'
    # answers: recorded data, never the session's decisions.
    assert texts == [
        "I decided to keep the endpoint synchronous because exports finish in under a second.",
        "Stream rows with the stdlib csv module instead of pandas, because reports can exceed"
        " 1 GB and pandas loads everything into memory.",
    ]
    assert {d.source for d in load_memory(demo).decisions} == {"stop"}


def test_golden_constraints_active(demo: sqlite3.Connection) -> None:
    texts = " | ".join(c.description for c in load_memory(demo).constraints)
    assert "Never touch the legacy billing module in src/billing_legacy.py." in texts
    assert "Always run pytest before you commit." in texts
    assert "Don't use openpyxl" in texts
    assert "sk-ant-api03" not in texts


def test_golden_progress(demo: sqlite3.Connection) -> None:
    todos, report = demo.execute(
        "SELECT todos, report FROM mem_sessions WHERE session_id=?", (DEMO_SESSION_ID,)
    ).fetchone()
    assert [t[1:] for t in json.loads(todos)] == [
        ["Add CSV export endpoint", "completed"],
        ["Write export tests", "in_progress"],
        ["Update the reports page button", "pending"],
    ]
    assert report.startswith("CSV export works")
    files = dict(demo.execute("SELECT path, edits FROM mem_files"))
    assert files["src/export.py"] == 4 and files["web/reports.html"] == 1
    assert store.get_meta(demo, "mem.last_session") == DEMO_SESSION_ID


def test_compaction_reads_only_new_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = demo_paths(tmp_path / "state")
    conn = _open(paths)
    compact(conn)
    seen: list[int] = []
    original = store.entries_after

    def spy(c: sqlite3.Connection, after_id: int, limit: int = 10000) -> list[Any]:
        seen.append(after_id)
        return original(c, after_id, limit)

    monkeypatch.setattr(store, "entries_after", spy)
    top = store.max_entry_id(conn)
    assert compact(conn).entries == 0
    assert seen == [top]


# --- failures, constraints, features across events ---------------------------------------------


def test_recurrence_after_a_fix_reopens_the_failure(tmp_path: Path) -> None:
    err = "Exit code 1\nError: cannot connect to db"
    events = [
        *bash("make test", "t1", error=err),
        edit("src/db.py", "PORT = 5433", "t2"),
        *bash("make test", "t3"),
        *bash("make test", "t4", error=err),
    ]
    conn = _open(replay(tmp_path / "s", events))
    compact(conn)
    (f,) = load_memory(conn).failures
    assert f.count == 2 and not f.resolved
    assert f.prevention.startswith("After editing src/db.py (PORT = 5433)")
    spool(tmp_path / "s", bash("make test", "t5"))
    catch_up(StatePaths(tmp_path / "s"))
    compact(conn)
    (f,) = load_memory(conn).failures
    assert f.resolved and f.prevention.startswith("Re-running without file edits")


def test_constraints_revoked_by_prompt_and_by_explicit_event(tmp_path: Path) -> None:
    events = [
        prompt("Never touch src/billing_legacy.py. Don't use openpyxl. Always write tests."),
        prompt("OK, you can edit src/billing_legacy.py now to fix the rounding bug."),
    ]
    conn = _open(replay(tmp_path / "s", events))
    compact(conn)
    active = {c.description: c.id for c in load_memory(conn).constraints}
    assert set(active) == {"Don't use openpyxl.", "Always write tests."}
    spool(
        tmp_path / "s",
        [emit_payload({"kind": "constraint", "revoke": active["Always write tests."]})],
    )
    spool(tmp_path / "s", [prompt("Always use openpyxl for spreadsheets.")])
    catch_up(StatePaths(tmp_path / "s"))
    compact(conn)
    assert [c.description for c in load_memory(conn).constraints] == [
        "Always use openpyxl for spreadsheets."
    ]


def test_explicit_events_features_and_feature_ids(tmp_path: Path) -> None:
    events = [
        emit_payload({"kind": "feature_start", "id": "F1", "name": "Export", "startedAt": 5}),
        emit_payload({"kind": "decision", "decision": "Use WAL", "featureId": "F1"}),
        base("Stop", last_assistant_message="We decided to cache the totals."),
        emit_payload({"kind": "failure", "description": "Deploy broke", "prevention": "Pin it"}),
        emit_payload({"kind": "constraint", "description": "Never deploy on Friday"}),
        emit_payload({"kind": "feature_complete", "id": "F1", "status": "failed"}),
        emit_payload({"kind": "feature_start", "id": "F2"}),
        emit_payload({"kind": "feature_complete", "id": "F1", "status": "completed"}),
    ]
    conn = _open(replay(tmp_path / "s", events))
    compact(conn)
    mem = load_memory(conn)
    decisions = {d.decision: d for d in mem.decisions}
    assert decisions["Use WAL"].featureId == "F1" and decisions["Use WAL"].source == "explicit"
    assert decisions["We decided to cache the totals."].featureId == "F1"  # the current feature
    failures = {f.description: f for f in mem.failures}
    assert failures["Deploy broke"].prevention == "Pin it"
    assert failures["Feature F1 ended with status failed"].resolved
    assert mem.constraints[0].description == "Never deploy on Friday"
    features = {f.id: f for f in mem.features}
    assert (features["F1"].status, features["F1"].startedAt) == ("completed", 5)
    assert features["F1"].completedAt > 0
    assert features["F2"].status == "in_progress" and features["F2"].startedAt > 0
    assert store.get_meta(conn, "mem.current_feature") == "F2"
    # The explicit decision outranks agent output (weight 3 vs 1).
    assert mem.decisions[0].decision == "Use WAL"
    # With a feature id, that feature's items come first.
    assert load_memory(conn, feature_id="F2").decisions == mem.decisions


def test_top_n_limits(tmp_path: Path) -> None:
    events = [
        base("Stop", last_assistant_message=f"We decided to use library number {i}.")
        for i in range(30)
    ]
    events += [e for i in range(15) for e in bash(f"tool{i}", f"b{i}", error="Exit code 1\nboom")]
    conn = _open(replay(tmp_path / "s", events))
    compact(conn)
    mem = load_memory(conn, SummarizerConfig(max_decisions=20, max_failures=10))
    assert len(mem.decisions) == 20 and len(mem.failures) == 10
    # The most recent come first (same count and weight: recency decides).
    assert mem.decisions[0].decision == "We decided to use library number 29."


def test_rerank_when_weights_change(tmp_path: Path) -> None:
    events = [
        prompt("We decided to use Postgres."),
        base("Stop", last_assistant_message="We decided to use Redis for caching."),
    ]
    conn = _open(replay(tmp_path / "s", events))
    compact(conn)
    assert load_memory(conn).decisions[0].decision == "We decided to use Postgres."
    cfg = SummarizerConfig(weight_user_prompt=0.1)
    compact(conn, cfg)
    assert load_memory(conn, cfg).decisions[0].decision == "We decided to use Redis for caching."


def test_a_bad_entry_is_skipped_not_fatal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conn = _open(replay(tmp_path / "s", [prompt("Never use tabs."), prompt("Always use spaces.")]))
    original = memory.observe

    def flaky(entry_id: int, e: Any) -> Any:
        if entry_id == 1:
            raise RuntimeError("boom")
        return original(entry_id, e)

    monkeypatch.setattr(memory, "observe", flaky)
    stats = compact(conn)
    assert stats.skipped == 1 and stats.watermark == 2
    assert [c.description for c in load_memory(conn).constraints] == ["Always use spaces."]


# --- incremental == one-shot ---------------------------------------------------------------------

_ERRORS = [
    "Exit code 1\nAssertionError: 1 != 2 (0.12s)",
    "Exit code 2\nError: missing /tmp/x/3.txt",
]
_EVENT = st.one_of(
    st.builds(lambda c, e, i: bash(c, f"t{i}", error=e), st.sampled_from(["make", "pytest -x"]),
              st.sampled_from(_ERRORS), st.integers(0, 10**9)),
    st.builds(lambda c, i: bash(c, f"t{i}"), st.sampled_from(["make", "pytest -x"]), st.integers(0, 10**9)),
    st.builds(lambda p, i: [edit(p, f"x = {i}", f"e{i}")], st.sampled_from(["a.py", "b.py"]), st.integers(0, 10**9)),
    st.builds(lambda t: [prompt(t)], st.sampled_from([
        "Never touch a.py.", "You can touch a.py now.", "Always use tabs.", "Never use tabs.",
        "We decided to use tabs.", "Don't use pandas; only csv.",
    ])),
    st.builds(lambda t: [base("Stop", last_assistant_message=t)], st.sampled_from([
        "We decided to use csv instead of pandas.", "Decision: keep it sync.", "Done.",
    ])),
    st.builds(lambda r: [emit_payload(r)], st.sampled_from([
        {"kind": "feature_start", "id": "F1"}, {"kind": "feature_complete", "id": "F1"},
        {"kind": "feature_complete", "id": "F2", "status": "failed"},
        {"kind": "decision", "decision": "Use WAL"}, {"kind": "constraint", "revoke": "x"},
    ])),
    st.builds(lambda s: [base("PostToolUse", tool_name="TodoWrite", tool_use_id=f"w{s}",
                              tool_input={"todos": [{"content": f"task {s}", "status": "pending"}]})],
              st.integers(0, 10**9)),
)  # fmt: skip


def _copy(src: sqlite3.Connection, path: Path) -> sqlite3.Connection:
    dst = sqlite3.connect(path, isolation_level=None)
    src.backup(dst)
    return dst


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    groups=st.lists(_EVENT, min_size=1, max_size=40),
    splits=st.lists(st.integers(1, 15), max_size=8),
    batch=st.integers(1, 12),
)
def test_incremental_equals_one_shot(
    tmp_path_factory: pytest.TempPathFactory,
    groups: list[list[dict[str, Any]]],
    splits: list[int],
    batch: int,
) -> None:
    d = tmp_path_factory.mktemp("inc")
    conn = _open(replay(d / "s", [p for g in groups for p in g]))
    one = _copy(conn, d / "one.db")
    many = _copy(conn, d / "many.db")
    compact(one)
    for n in splits:
        compact(many, max_entries=n, batch_entries=batch)
    compact(many, batch_entries=batch)
    assert dump_memory(one) == dump_memory(many)
    assert load_memory(one) == load_memory(many)


# --- the real corpus -------------------------------------------------------------------------------


def _corpus_repos() -> list[Path]:
    hooks = CORPUS / "hooks"
    return sorted(p for p in hooks.iterdir() if p.is_dir()) if hooks.is_dir() else []


@pytest.mark.skipif(not (CORPUS / "hooks").is_dir(), reason=f"corpus not found at {CORPUS}/hooks")
@pytest.mark.parametrize("repo", _corpus_repos(), ids=lambda p: p.name)
def test_corpus_compacts_every_session_within_budget(repo: Path, tmp_path: Path) -> None:
    from indexer.config import Config
    from summarizer.common.budget import utf16_len
    from summarizer.common.tokens import get_counter
    from summarizer.memory.compact import compact_and_publish
    from summarizer.memory.inject import ContextAgent
    from summarizer.memory.summary import render_summary, summary_lines

    counter = get_counter()
    cfg = Config()
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    conn = None
    for path in sorted(repo.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="surrogatepass").splitlines():
            if line.strip():
                spool(paths.root, [json.loads(line)], cwd=PROJECT)
        catch_up(paths)  # incremental: one compaction per log file
        conn = conn or _open(paths)
        result = compact_and_publish(conn, paths, cfg, trigger="test")
        assert result.stats.skipped == 0
    assert conn is not None
    mem = load_memory(conn)
    sessions = [r[0] for r in conn.execute("SELECT session_id FROM sessions")]
    assert sessions
    for sid in sessions:
        text = render_summary(summary_lines(conn, mem, sid), 2000, counter)
        assert counter.count(text) <= 2000 and utf16_len(text) <= 10_000
    for name in ("running-summary", "key-decisions", "failure-memory", "active-constraints"):
        doc = json.loads((paths.context / f"{name}.json").read_text())
        assert doc["watermark"] == store.max_entry_id(conn)
        assert doc["tokenCount"] <= (2000 if name == "running-summary" else 4000)
    injection = ContextAgent(state_dir=paths.root).get_injection()
    assert "error" not in injection
    assert injection["tokenCount"] <= 2000
