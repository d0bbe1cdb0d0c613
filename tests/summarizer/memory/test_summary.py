"""summarizer.memory.summary and summarizer.memory.backend: the four context files, within budget, atomically."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memory_helpers import base, demo_paths, prompt, replay

from indexer.config import Config, SummarizerConfig
from indexer.index import store
from summarizer.common.budget import utf16_len
from summarizer.common.tokens import get_counter
from summarizer.memory.backend import CommandBackend, backend_for, clamp
from summarizer.memory.compact import compact_and_publish
from summarizer.memory.reader import load_memory
from summarizer.memory.store import compact
from summarizer.memory.summary import publish, render_summary, summary_lines

COUNTER = get_counter()
FILES = ("running-summary", "key-decisions", "failure-memory", "active-constraints")


def test_publish_writes_the_four_files(tmp_path: Path) -> None:
    paths = demo_paths(tmp_path / "state")
    conn = store.connect(paths.index_db)
    result = compact_and_publish(conn, paths, Config(), trigger="test")
    top = store.max_entry_id(conn)
    docs = {n: json.loads((paths.context / f"{n}.json").read_text()) for n in FILES}
    for name, doc in docs.items():
        assert doc["version"] == 1 and doc["watermark"] == top, name
        mode = stat.S_IMODE((paths.context / f"{name}.json").stat().st_mode)
        assert mode == 0o600, name
    summary = docs["running-summary"]
    assert summary["tokenCount"] == COUNTER.count(summary["summary"]) <= 2000
    assert summary["summary"] == result.published.summary if result.published else False
    assert "src/export.py (4)" in summary["summary"]
    assert "Tasks — in progress: Write export tests" in summary["summary"]
    for name, key in (("key-decisions", "decisions"), ("failure-memory", "failures"),
                      ("active-constraints", "constraints")):  # fmt: skip
        items = docs[name][key]
        assert docs[name]["tokenCount"] == COUNTER.count(json.dumps(items, ensure_ascii=False))
    (failure,) = docs["failure-memory"]["failures"]
    assert (
        failure["count"] == 3 and failure["resolved"] and "src/export.py" in failure["prevention"]
    )
    assert len(docs["key-decisions"]["decisions"]) == 2  # the main agent's own (see test_memory)
    assert len(docs["active-constraints"]["constraints"]) == 3
    assert not list(paths.context.glob(".*.tmp"))  # temp files renamed into place (I11)
    assert store.get_meta(conn, "last_compaction") and store.get_meta(conn, "mem.published") == str(
        top
    )


def test_list_files_are_cut_to_their_token_budget(tmp_path: Path) -> None:
    events = [
        base("Stop", last_assistant_message=f"We decided to use library {i} " + "word " * 50 + ".")
        for i in range(20)
    ]
    paths = replay(tmp_path / "s", events)
    conn = store.connect(paths.index_db)
    compact(conn)
    cfg = SummarizerConfig(context_file_max_tokens=300)
    publish(conn, paths, load_memory(conn, cfg), cfg, COUNTER, trigger="t")
    doc = json.loads((paths.context / "key-decisions.json").read_text())
    assert 0 < len(doc["decisions"]) < 20
    assert doc["tokenCount"] <= 300


HUGE = "Exit code 1\n" + "Traceback (most recent call last): 中文😀 \ud800 " * 2000
TEXT = st.one_of(
    st.text(max_size=200),
    st.sampled_from([HUGE, "word " * 5000, "😀" * 9000, "<|endoftext|>" * 100, "\ud800" * 50]),
)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
@given(prompts=st.lists(TEXT, min_size=1, max_size=6), reports=st.lists(TEXT, max_size=4),
       budget=st.sampled_from([1, 50, 300, 2000]))  # fmt: skip
def test_summary_within_budget_for_arbitrary_text(
    tmp_path_factory: pytest.TempPathFactory, prompts: list[str], reports: list[str], budget: int
) -> None:
    events = [prompt(p) for p in prompts if p.strip()]
    events += [base("Stop", last_assistant_message=r) for r in reports]
    events += [base("PostCompact", trigger="auto", compact_summary=r) for r in reports]
    paths = replay(tmp_path_factory.mktemp("sum") / "s", events or [prompt("x")])
    conn = store.connect(paths.index_db)
    compact(conn)
    text = render_summary(summary_lines(conn, load_memory(conn)), budget, COUNTER)
    assert COUNTER.count(text) <= budget
    assert utf16_len(text) <= 10_000
    text.encode("utf-8")


# --- the command backend -----------------------------------------------------------------------


def _script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "backend.py"
    path.write_text(body)
    return [sys.executable, str(path)]


def test_command_backend_is_used_and_clamped(tmp_path: Path) -> None:
    cmd = _script(tmp_path, "import sys\nsys.stdin.read()\nprint('LLM SUMMARY ' * 3000)\n")
    backend = CommandBackend(cmd, 10.0, COUNTER)
    out = backend.summarize("material", 100)
    assert out is not None and out.startswith("LLM SUMMARY") and COUNTER.count(out) <= 100


@pytest.mark.parametrize(
    "body",
    [
        "import sys\nsys.exit(3)\n",
        "import time\ntime.sleep(30)\n",
        "print('')\n",
    ],
    ids=["exit-code", "timeout", "empty"],
)
def test_command_backend_failures_fall_back(tmp_path: Path, body: str) -> None:
    backend = CommandBackend(_script(tmp_path, body), 0.5, COUNTER)
    assert backend.summarize("material", 100) is None


def test_missing_command_falls_back() -> None:
    assert CommandBackend(["/nonexistent/ctxd-llm"], 1.0, COUNTER).summarize("m", 10) is None


def test_publish_with_command_backend(tmp_path: Path) -> None:
    paths = demo_paths(tmp_path / "state")
    conn = store.connect(paths.index_db)
    compact(conn)
    cmd = _script(
        tmp_path,
        "import sys\ndata = sys.stdin.read()\nprint('Project: CSV export.' if 'src/export.py' in data else 'bad')\n",
    )
    cfg = SummarizerConfig(backend="command", command=cmd, command_timeout_s=10.0)
    backend = backend_for(cfg, COUNTER)
    assert backend is not None
    result = publish(conn, paths, load_memory(conn), cfg, COUNTER, trigger="t", backend=backend)
    doc = json.loads((paths.context / "running-summary.json").read_text())
    assert result.backend == "command" and doc["backend"] == "command"
    assert doc["summary"] == "Project: CSV export."
    assert backend_for(SummarizerConfig(), COUNTER) is None


def test_clamp_handles_surrogates_and_long_lines() -> None:
    text = clamp("a\ud800b\n" + "x" * 50_000, 30, COUNTER)
    assert COUNTER.count(text) <= 30 and "\ud800" not in text
