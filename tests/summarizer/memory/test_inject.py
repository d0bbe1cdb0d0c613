"""summarizer.memory.inject: seed 004's injection within budget; ContextAgent never raises; CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memory_helpers import PROJECT, demo_paths, emit_payload, spool

from indexer.config import SummarizerConfig
from summarizer import ContextAgent
from summarizer.common.budget import utf16_len
from summarizer.common.models import Constraint, Decision, Failure, Memory
from summarizer.common.tokens import get_counter
from summarizer.memory.inject import build_injection, empty_injection
from summarizer.memory.inject_cache import render_injection

COUNTER = get_counter()
CFG = SummarizerConfig()

HUGE = ('Traceback (most recent call last):\n  File "app.py", line 12\n中文😀 ' * 3000)[:200_000]
TEXT = st.one_of(
    st.text(max_size=120),
    st.text(alphabet=st.characters(categories=["Cs", "So", "Lo", "Zs", "Mn"]), max_size=60),
    st.sampled_from(["", "\ud800 lone \udfff", "<|endoftext|>", HUGE, "word " * 3000, "😀" * 5000]),
)
FEATURE = st.sampled_from(["", "F1", "F2"])
MEMORY = st.builds(
    Memory,
    decisions=st.lists(st.builds(Decision, id=st.just("d"), decision=TEXT, featureId=FEATURE), max_size=30),
    failures=st.lists(st.builds(Failure, signature=st.just("f"), description=TEXT, prevention=TEXT,
                                featureId=FEATURE, count=st.integers(1, 9)), max_size=12),
    constraints=st.lists(st.builds(Constraint, id=st.just("c"), description=TEXT, featureId=FEATURE),
                         max_size=300),
)  # fmt: skip
SUMMARY = st.one_of(TEXT, st.lists(TEXT, max_size=50).map("\n".join))


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    memory=MEMORY,
    summary=SUMMARY,
    budget=st.integers(-5, 6000),
    feature=st.sampled_from([None, "F1"]),
)
def test_injection_within_budget(
    memory: Memory, summary: str, budget: int, feature: str | None
) -> None:
    inj = build_injection(
        summary, memory, feature_id=feature, budget=budget, cfg=CFG, counter=COUNTER
    )
    assert set(inj) >= {"summary", "decisions", "failures", "constraints", "tokenCount"}
    if inj["tokenCount"] == 0:
        assert inj == empty_injection()
        return
    text = render_injection(inj)
    assert inj["tokenCount"] == COUNTER.count(text) <= budget
    assert utf16_len(text) <= 10_000
    assert len(inj["decisions"]) <= 3 and len(inj["failures"]) <= 2
    json.dumps(inj, ensure_ascii=False).encode("utf-8")  # no lone surrogates
    if feature:  # the feature's items come first (kept items are a subsequence of that order)
        for key in ("decisions", "failures", "constraints"):
            mine = [item["featureId"] == feature for item in inj[key]]
            assert mine == sorted(mine, reverse=True)


def test_default_split_and_flow_to_summary() -> None:
    memory = Memory(
        decisions=[
            Decision(id=str(i), decision=f"We decided to use option {i}.") for i in range(5)
        ],
        failures=[
            Failure(signature="s", description="`make` failed: boom", prevention="Install gcc")
        ],
        constraints=[Constraint(id="c", description="Never touch prod.")],
    )
    summary = "\n".join(f"Line {i}: " + "detail " * 20 for i in range(100))
    inj = build_injection(summary, memory, feature_id=None, budget=2000, cfg=CFG, counter=COUNTER)
    assert [d["decision"] for d in inj["decisions"]] == [
        f"We decided to use option {i}." for i in range(3)
    ]
    assert inj["failures"] == [
        {"description": "`make` failed: boom", "prevention": "Install gcc", "featureId": "n/a"}
    ]
    assert inj["constraints"] == [{"description": "Never touch prod.", "featureId": "n/a"}]
    # The lists use far less than their share; the summary gets the rest of the 2000 tokens
    # (or of the 10,000 characters, whichever binds first).
    assert inj["tokenCount"] <= 2000
    assert inj["tokenCount"] >= 1900 or utf16_len(render_injection(inj)) >= 9800
    small = build_injection(summary, memory, feature_id=None, budget=300, cfg=CFG, counter=COUNTER)
    assert small["tokenCount"] <= 300 and small["decisions"] and small["summary"]


def test_thousands_of_items_stay_within_budget() -> None:
    memory = Memory(
        decisions=[Decision(id=str(i), decision=f"We decided {i} " * 30) for i in range(5000)],
        failures=[Failure(signature=str(i), description="boom " * 500, prevention="x " * 900)
                  for i in range(5000)],
        constraints=[Constraint(id=str(i), description=f"Never do thing {i}.") for i in range(5000)],
    )  # fmt: skip
    for budget in (1, 30, 400, 2000, 8000):
        inj = build_injection("s " * 50_000, memory, feature_id="F", budget=budget, cfg=CFG,
                              counter=COUNTER)  # fmt: skip
        text = render_injection(inj)
        assert inj["tokenCount"] <= budget and utf16_len(text) <= 10_000
        if inj["tokenCount"]:
            assert inj["tokenCount"] == COUNTER.count(text)


def test_unresolved_failure_says_so() -> None:
    memory = Memory(failures=[Failure(signature="s", description="`make` failed", count=3)])
    inj = build_injection("", memory, feature_id=None, budget=2000, cfg=CFG, counter=COUNTER)
    assert inj["failures"][0]["prevention"] == "not resolved yet (seen 3×)"


# --- ContextAgent on a real state directory ---------------------------------------------------------


def test_context_agent_on_the_demo(tmp_path: Path) -> None:
    paths = demo_paths(tmp_path / "state")
    agent = ContextAgent(state_dir=paths.root)
    inj = agent.get_injection()
    assert inj["tokenCount"] == COUNTER.count(render_injection(inj)) <= 2000
    assert inj["decisions"][0]["decision"].startswith("Stream rows with the stdlib csv module")
    assert "src/export.py" in inj["failures"][0]["prevention"]
    assert len(inj["constraints"]) == 3
    assert "Most edited files: src/export.py (4)" in inj["summary"]
    # The call compacted first (I12): the context files exist and cover the index.
    assert json.loads((paths.context / "running-summary.json").read_text())["trigger"] == "inject"


def test_context_agent_feature_items_first_and_summarize(tmp_path: Path) -> None:
    paths = demo_paths(tmp_path / "state")
    agent = ContextAgent(state_dir=paths.root)
    agent.record("feature_start", id="F-9", name="Button", cwd=PROJECT)
    agent.record("decision", decision="Use an <a> link for the export button", featureId="F-9")
    result = agent.summarize(["F-9"], trigger="feature_count")
    assert result == {"success": True, "newDecisions": 3, "newFailures": 1, "features": ["F-9"]}
    again = agent.summarize(["F-9"], trigger="feature_count")
    assert again["success"] and again["newDecisions"] == 0
    inj = agent.get_injection("F-9", budget=2000)
    assert inj["decisions"][0] == {
        "decision": "Use an <a> link for the export button",
        "featureId": "F-9",
    }
    assert "Features — in progress: F-9 (Button)" in inj["summary"]


def test_context_agent_on_an_empty_project_creates_nothing(tmp_path: Path) -> None:
    agent = ContextAgent(tmp_path)
    assert agent.get_injection() == empty_injection()
    assert not (tmp_path / ".ctxd").exists()
    assert agent.paths.root == tmp_path / ".ctxd"


def test_context_agent_never_raises(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "index.db").write_bytes(b"this is not a database" * 100)
    agent = ContextAgent(state_dir=state)
    inj = agent.get_injection()
    assert inj["tokenCount"] == 0 and "error" in inj
    result = agent.summarize(["F1"], "feature_count")
    assert result["success"] is False and result["newDecisions"] == 0 and result["error"]


# --- CLI ----------------------------------------------------------------------------------------------


def test_cli_inject_and_compact(tmp_path: Path) -> None:
    state = tmp_path / "state"
    from summarizer.cli.commands.demo_session import demo_session

    spool(state, demo_session(PROJECT))
    out = run_cli("compact", "--state-dir", str(state))
    assert out.returncode == 0, out.stderr
    assert "compacted 51 new entries" in out.stdout and "+2 decisions, +1 failures" in out.stdout
    out = run_cli("inject", "--state-dir", str(state), "--budget", "500")
    assert out.returncode == 0, out.stderr
    inj = json.loads(out.stdout)
    assert 0 < inj["tokenCount"] <= 500 and inj["failures"]
    spool(state, [emit_payload({"kind": "decision", "decision": "Ship on Mondays"})])
    md = run_cli("inject", "--state-dir", str(state), "--format", "markdown", "--feature-id", "X")
    assert md.returncode == 0, md.stderr
    assert md.stdout.startswith("## Project Context\n\n**Summary:**\n")
    assert "- Ship on Mondays\n" in md.stdout  # inject caught up first (I12); no "(Feature n/a)"
    bad = run_cli("inject", "--state-dir", str(state), "--budget", "0")
    assert bad.returncode == 2 and "positive" in bad.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="flock")
def test_cli_compact_on_an_empty_state_dir(tmp_path: Path) -> None:
    (tmp_path / "new").mkdir(mode=0o700)  # as `ctxd init` leaves it (none at all is an error)
    out = run_cli("compact", "--state-dir", str(tmp_path / "new"))
    assert out.returncode == 0, out.stderr
    assert "compacted 0 new entries" in out.stdout
    md = run_cli("inject", "--state-dir", str(tmp_path / "new"), "--format", "markdown")
    assert md.returncode == 0 and md.stdout == ""
