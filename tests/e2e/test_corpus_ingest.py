"""Every real Claude Code payload of ../shared/corpus/hooks through the real hook and `ctxd ingest`.

The corpus is not part of the project (its licenses do not allow redistribution, see
PROVENANCE.md); CI provides it next to the checkout. Without it these tests skip.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from helpers import CORPUS, hook_env, parse_envelope, query, run_cli, run_hook, spool_lines

from ctxd_hook import hook
from indexer.redact.raw import may_contain_secret, redact_bytes
from indexer.redact.text import redact_text

HOOKS = CORPUS / "hooks"
pytestmark = pytest.mark.skipif(
    not HOOKS.is_dir(),
    reason=f"real-payload corpus not found at {HOOKS} (CI provides ../shared/corpus next to "
    "the checkout; it is not redistributable, so it is not committed here)",
)

AGENT_TOOLS = ("Agent", "Task")
SUBPROCESS_SAMPLE = 50  # records sent through the real hook process; the rest in-process
# PROVENANCE.md, "Not real Claude Code output": the only records that must be quarantined.
BROKEN_FILES = {
    "FrancoEscob__nexus-dmeo/status_line.jsonl": 35,  # statusLine input, not a hook payload
    "FrancoEscob__nexus-dmeo/notification.jsonl": 7,  # {"message": …} manual tests
    "FrancoEscob__nexus-dmeo/raw_stdin_bundle_hook.jsonl": 1,  # {}
}
# Shapes of live secrets; none may survive into the index.
SECRET_SHAPES = [
    re.compile(p)
    for p in (
        r"AIza[0-9A-Za-z_-]{35}",
        r"sk-ant-[A-Za-z0-9_-]{20,}",
        r"gh[pousr]_[A-Za-z0-9]{36,}",
        r"github_pat_[A-Za-z0-9_]{22,}",
        r"\bA(?:KI|SI)A[A-Z0-9]{16}\b",
        r"xox[abposr]-[0-9A-Za-z-]{10,}",
        r"\b[sr]k_live_[0-9A-Za-z]{10,}",
        r"eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{10,}",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----\s*[A-Za-z0-9+/=]{16,}",
        r"\b[0-9a-f]{32}\.[A-Za-z0-9]{16}\b",  # the z.ai token shape PROVENANCE.md mentions
    )
]
TEXT_COLUMNS = ("description", "instruction", "output_summary", "error", "files", "text", "cwd")


@dataclass(frozen=True)
class Record:
    source: str  # <repo dir>/<file>.jsonl
    line_no: int  # 1-based
    raw: bytes
    obj: Any

    @property
    def well_formed(self) -> bool:
        o = self.obj
        return (
            isinstance(o, dict)
            and isinstance(o.get("session_id"), str)
            and bool(o["session_id"])
            and isinstance(o.get("hook_event_name"), str)
            and bool(o["hook_event_name"])
        )

    @property
    def key(self) -> tuple[str, str, str] | None:
        """The dedupe key (session_id, tool_use_id, hook_event_name), if it has a tool_use_id."""
        tool_use_id = self.obj.get("tool_use_id") if isinstance(self.obj, dict) else None
        if not self.well_formed or not tool_use_id:
            return None
        return (self.obj["session_id"], tool_use_id, self.obj["hook_event_name"])


@dataclass
class Corpus:
    state: Path
    records: list[Record]
    fed: list[int]  # record index of each spool line, in order
    ingest_out: str
    by_event_id: dict[tuple[int, int], int] = field(default_factory=dict)  # (ts_ns, pid) -> rec


def load_records() -> list[Record]:
    records = []
    for path in sorted(HOOKS.rglob("*.jsonl")):
        source = str(path.relative_to(HOOKS))
        for n, line in enumerate(path.read_bytes().split(b"\n"), 1):
            if line.strip():
                records.append(Record(source, n, line, json.loads(line)))
    return records


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    state = tmp_path_factory.mktemp("corpus") / "state"
    env = hook_env(state)
    records = load_records()
    step = max(1, len(records) // SUBPROCESS_SAMPLE)
    fed: list[int] = []
    sampled = 0
    for i, rec in enumerate(records):
        # Not SessionStart: that hook may build the resume context and so catch up by itself
        # (ARCHITECTURE §8), which would split the counts `ctxd ingest` reports below. Not
        # PreCompact either: it starts a detached builder that catches up the same way.
        if i % step == 0 and rec.obj.get("hook_event_name") not in ("SessionStart", "PreCompact"):
            proc = run_hook(rec.raw, env)
            assert proc.returncode == 0, (rec.source, rec.line_no, proc.stderr)
            assert proc.stdout == b"", (rec.source, rec.line_no)
            sampled += 1
        else:
            assert hook.run(rec.raw, env, str(state.parent))
        fed.append(i)
    assert sampled >= SUBPROCESS_SAMPLE * 0.9
    # Duplicate deliveries: every payload with a tool_use_id arrives a second time.
    for i, rec in enumerate(records):
        if rec.key is not None:
            assert hook.run(rec.raw, env, str(state.parent))
            fed.append(i)
    proc = run_cli("ingest", state_dir=state, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    c = Corpus(state, records, fed, proc.stdout)
    lines = spool_lines(state)
    assert len(lines) == len(fed)
    for line, i in zip(lines, fed, strict=True):
        env_ = parse_envelope(line)
        assert env_["event"] == records[i].obj, (records[i].source, records[i].line_no)
        event_id = (env_["ts_ns"], env_["pid"])
        assert event_id not in c.by_event_id, "two spool lines share (ts_ns, pid)"
        c.by_event_id[event_id] = i
    return c


def entries(c: Corpus) -> list[dict[str, Any]]:
    cols = (
        "ts_ns",
        "pid",
        "session_id",
        "hook_event",
        "event",
        "agent_id",
        "agent_type",
        "cc_agent_id",
        "tool_name",
        "tool_use_id",
    )
    rows = query(c.state, f"SELECT {', '.join(cols)} FROM entries ORDER BY id")
    return [dict(zip(cols, r, strict=True)) for r in rows]


def test_corpus_is_what_provenance_describes(corpus: Corpus) -> None:
    broken = Counter(r.source for r in corpus.records if not r.well_formed)
    assert dict(broken) == BROKEN_FILES
    assert len(corpus.records) > 5000


def test_every_well_formed_payload_is_indexed_once(corpus: Corpus) -> None:
    rows = entries(corpus)
    first_delivery = corpus.fed[: len(corpus.records)]
    assert first_delivery == list(range(len(corpus.records)))
    well_formed = [r for r in corpus.records if r.well_formed]
    keys = Counter(r.key for r in well_formed if r.key is not None)
    without_key = sum(1 for r in well_formed if r.key is None)
    assert len(rows) == without_key + len(keys)

    indexed_records = Counter(corpus.by_event_id[(e["ts_ns"], e["pid"])] for e in rows)
    indexed_keys = Counter(corpus.records[i].key for i in indexed_records)
    for rec_index, rec in enumerate(corpus.records):
        if not rec.well_formed:
            assert rec_index not in indexed_records, (rec.source, rec.line_no)
        elif rec.key is None:
            assert indexed_records[rec_index] == 1, (rec.source, rec.line_no)
        else:
            assert indexed_keys[rec.key] == 1, rec.key
    # PROVENANCE.md's hand-typed test payloads are well-formed: indexed like the rest.
    hand_typed = query(
        corpus.state,
        "SELECT session_id, count(*) FROM entries"
        " WHERE session_id IN ('test-session', 'test-uv', 'final-test') GROUP BY 1 ORDER BY 1",
    )
    assert hand_typed == [("final-test", 1), ("test-session", 2), ("test-uv", 1)]
    dupes = query(
        corpus.state,
        "SELECT session_id, tool_use_id, hook_event, count(*) FROM entries"
        " WHERE tool_use_id<>'' GROUP BY 1, 2, 3 HAVING count(*) > 1",
    )
    assert dupes == []
    m = re.match(
        r"indexed (\d+) entries from (\d+) lines \(\d+ bytes\); (\d+) duplicates, "
        r"(\d+) quarantined, 0 anomalies",
        corpus.ingest_out,
    )
    assert m, corpus.ingest_out
    assert [int(g) for g in m.groups()] == [
        len(rows),
        len(corpus.fed),
        len(corpus.fed) - len(rows) - sum(BROKEN_FILES.values()),
        sum(BROKEN_FILES.values()),
    ]


def test_session_event_and_agent_of_every_entry(corpus: Corpus) -> None:
    aliases = {
        (s, a): t
        for s, a, t in query(corpus.state, "SELECT session_id, alias, agent_id FROM agent_aliases")
    }
    agents = {
        (s, a): (t, tu)
        for s, a, t, tu in query(
            corpus.state, "SELECT session_id, agent_id, agent_type, tool_use_id FROM agents"
        )
    }
    agent_by_tool = {(s, tu): a for (s, a), (_, tu) in agents.items() if tu}
    kinds: Counter[str] = Counter()
    for e in entries(corpus):
        rec = corpus.records[corpus.by_event_id[(e["ts_ns"], e["pid"])]]
        p = rec.obj
        where = (rec.source, rec.line_no)
        assert e["session_id"] == p["session_id"], where
        assert e["hook_event"] == p["hook_event_name"], where
        assert e["tool_name"] == (p.get("tool_name") or ""), where
        session = p["session_id"]
        if p.get("tool_name") in AGENT_TOOLS and p["hook_event_name"] in (
            "PreToolUse",
            "PostToolUse",
            "PostToolUseFailure",
        ):
            kinds["agent tool"] += 1
            assert e["event"].startswith("agent_"), where
            assert (session, e["agent_id"]) in agents, where
            if p.get("tool_use_id") and (session, p["tool_use_id"]) in agent_by_tool:
                assert agent_by_tool[(session, p["tool_use_id"])] == e["agent_id"], where
            else:  # an explicit AgentId reused by a later call keeps the later tool_use_id
                assert not p.get("tool_use_id") or agents[(session, e["agent_id"])][1], where
            subagent_type = (p.get("tool_input") or {}).get("subagent_type") or "general-purpose"
            assert e["agent_type"].lower() == subagent_type.lower(), where
            agent_id_of_cc = (
                (p.get("tool_response") or {}).get("agentId")
                if isinstance(p.get("tool_response"), dict)
                else None
            )
            if agent_id_of_cc:
                assert aliases[(session, agent_id_of_cc)] == e["agent_id"], where
        elif (
            p["hook_event_name"] == "SubagentStop" and p.get("agent_id") and not p.get("agent_type")
        ):
            # Claude Code's own fork (the compaction, a recap): the session's, not an agent's.
            kinds["compaction"] += 1
            assert e["agent_id"] == "main", where
            assert e["event"] in ("compact_summary", "fork_stop"), where
        elif p.get("agent_id"):
            kinds["inside a subagent"] += 1
            assert e["cc_agent_id"] == p["agent_id"], where
            assert aliases[(session, p["agent_id"])] == e["agent_id"], where
            assert e["agent_id"] != "main", where
        else:
            kinds["main"] += 1
            assert e["agent_id"] == "main", where
    assert kinds["agent tool"] > 50 and kinds["inside a subagent"] > 100 and kinds["main"] > 4000


def test_only_the_broken_records_are_quarantined(corpus: Corpus) -> None:
    rows = query(corpus.state, "SELECT name, offset, line_no, error, raw FROM quarantine")
    assert len(rows) == sum(BROKEN_FILES.values())
    expected = Counter(
        json.dumps(r.obj, sort_keys=True) for r in corpus.records if not r.well_formed
    )
    got = Counter(json.dumps(json.loads(bytes(raw)), sort_keys=True) for *_, raw in rows)
    assert got == expected
    for name, offset, line_no, error, _ in rows:
        assert name.endswith(".jsonl") and offset >= 0 and line_no >= 1
        assert "session_id" in error or "hook_event_name" in error, error


def test_views_hold_every_entry(corpus: Corpus) -> None:
    per_view = Counter()
    for path in (corpus.state / "sessions").glob("*/*.jsonl"):
        if path.name != "agent-instructions.jsonl":
            for line in path.read_bytes().splitlines():
                per_view[json.loads(line)["seq"]] += 1
    ids = [r[0] for r in query(corpus.state, "SELECT id FROM entries")]
    assert sorted(per_view) == sorted(ids)
    assert set(per_view.values()) == {1}


def test_no_secret_survives_in_the_index(corpus: Corpus) -> None:
    rows = query(corpus.state, f"SELECT id, {', '.join(TEXT_COLUMNS)}, detail FROM entries")
    flagged = redacted = 0
    for entry_id, *values in rows:
        *texts, detail = values
        detail = bytes(detail)
        for column, value in zip(TEXT_COLUMNS, texts, strict=True):
            if may_contain_secret(value.encode("utf-8", "surrogatepass")):
                flagged += 1
                assert redact_text(value) == value, (entry_id, column, value[:300])
            for shape in SECRET_SHAPES:
                assert not shape.search(value), (entry_id, column, shape.pattern)
        assert redact_bytes(detail) == detail, (entry_id, detail[:300])
        text = detail.decode("utf-8", "replace")
        for shape in SECRET_SHAPES:
            assert not shape.search(text), (entry_id, "detail", shape.pattern)
        redacted += b"[REDACTED:" in detail or any("[REDACTED:" in v for v in texts)
    # The corpus does contain pattern hits (placeholders, example tokens): the check is not idle.
    assert flagged > 0 and redacted > 0
    print(
        f"\n{flagged} values passed the secret prefilter; {redacted} entries hold redactions",
        file=sys.stderr,
    )
