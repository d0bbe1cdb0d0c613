"""summarizer.memory.emit: explicit events through the spool, from the CLI and from Python."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import query, run_cli, spool_lines

from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up
from summarizer.memory.emit import EmitError, build_record, emit


def test_cli_emit_every_kind(tmp_path: Path) -> None:
    state = tmp_path / "state"
    runs = [
        ("emit", "feature-start", "F-1", "--name", "CSV export", "--category", "reports"),
        ("emit", "decision", "Use", "the", "csv", "module", "--rationale", "streaming", "--feature-id", "F-1"),
        ("emit", "failure", "Export timed out", "--prevention", "Stream rows", "--command", "make e2e"),
        ("emit", "constraint", "Never touch billing", "--session", "orch-7"),
        ("emit", "feature-complete", "F-1", "--status", "passed", "--completed-at", "1700000000000"),
    ]  # fmt: skip
    for args in runs:
        out = run_cli(*args, "--state-dir", str(state))
        assert out.returncode == 0, out.stderr
        json.loads(out.stdout)
    lines = [json.loads(line) for line in spool_lines(state)]
    records = [line["event"]["ctxd_record"] for line in lines]
    assert [r["kind"] for r in records] == [
        "feature_start", "decision", "failure", "constraint", "feature_complete",
    ]  # fmt: skip
    assert records[0]["status"] == "in_progress" and records[0]["startedAt"] > 0
    assert records[1] == {"kind": "decision", "featureId": "F-1", "decision": "Use the csv module",
                          "rationale": "streaming"}  # fmt: skip
    assert records[4]["completedAt"] == 1700000000000 and records[4]["status"] == "passed"
    assert lines[3]["event"]["session_id"] == "orch-7"
    assert {line["event"]["hook_event_name"] for line in lines} == {"CtxdEmit"}
    catch_up(StatePaths(state))
    rows = query(state, "SELECT event, description FROM entries ORDER BY id")
    assert rows == [
        ("feature_start", "CSV export"),
        ("decision", "Use the csv module"),
        ("failure", "Export timed out"),
        ("constraint", "Never touch billing"),
        ("feature_complete", ""),  # normalize describes a feature event by its name
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("decision",), "nothing to record: give the text, e.g. `ctxd emit decision "),
        (("constraint",), "nothing to record: give the text, e.g. `ctxd emit constraint "),
        (("feature-start",), "nothing to record: give the text, e.g. `ctxd emit feature-start"),
        (("constraint", "--revoke", "no such rule"), "no constraint in force has the id or text"),
        (("decision", "x", "--session", "../etc"), "invalid session id"),
        (("feature-complete", "F1", "--completed-at", "soon"), "expected milliseconds"),
    ],
)
def test_cli_emit_errors_are_one_line(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    out = run_cli("emit", *args, "--state-dir", str(tmp_path / "s"))
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1 and message in out.stderr, out.stderr
    assert out.stderr.startswith("ctxd emit: error: "), out.stderr  # not "ctxd None"


def test_revoke_record() -> None:
    assert build_record("constraint", {"revoke": "abc"}) == {"kind": "constraint", "revoke": "abc"}
    with pytest.raises(EmitError):
        build_record("banana", {})


def test_many_emits_from_one_process_all_reach_the_index(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "state")
    for i in range(300):
        emit("decision", paths=paths, decision=f"decision number {i}")
    result = catch_up(paths)
    assert result.stats.entries == 300 and result.stats.duplicates == 0
    assert query(paths.root, "SELECT count(DISTINCT ts_ns) FROM entries") == [(300,)]


def test_emit_session_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = StatePaths(tmp_path / "state")
    monkeypatch.setenv("CTXD_SESSION_ID", "run-42")
    emit("note", paths=paths, description="hello")
    (line,) = spool_lines(paths.root)
    assert json.loads(line)["event"]["session_id"] == "run-42"
