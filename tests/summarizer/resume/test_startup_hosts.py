"""The startup memory of a project worked on in Claude Code and in Codex CLI: each failure and
decision says which client's session it came from, within the memory's token budget."""

from __future__ import annotations

from summarizer.common.tokens import get_counter
from summarizer.resume.startup import STARTUP_MAX_TOKENS, render_startup
from summarizer.resume.state import FailureNote, ResumeState

CODEX, CLAUDE = "01a2340e-8f25-7850-9e05-fd46076aa20c", "7b0e2f0c-5b1d-4c3e-9a51-3f0c2f9d1e77"


def _state(host: str, session_id: str) -> ResumeState:
    return ResumeState(
        session_id=session_id,
        trigger="compaction",
        active_project="app",
        active_agent="main",
        confidence="high",
        detection_method="index:recent_edits",
        created_at="2026-12-02T00:10:00.000Z",
        title="Fix the CSV export header",
        host=host,
        open_failures=[
            FailureNote(
                "Bash `python -m pytest tests/test_export.py` failed (exit 1)", "Bash",
                session_id=CLAUDE,
            ),
            FailureNote("Bash `ruff check .` failed (exit 1)", "Bash", session_id=CODEX),
        ],
        decisions=["Stream rows with the csv module", "Keep the header in export.py"],
        decision_sessions=[CODEX, CLAUDE],
    )


def test_the_other_clients_failures_and_decisions_say_where_they_come_from() -> None:
    count = get_counter("cl100k_base").count
    hosts = {CODEX: "codex", CLAUDE: "claude"}
    text = render_startup(_state("codex", CODEX), count, hosts=hosts)
    assert text.startswith('ctxd project memory: left open by session "Fix the CSV export header"'
                           " (01a2340e, Codex)")  # fmt: skip
    assert (
        "- Bash `python -m pytest tests/test_export.py` failed (exit 1) (in a Claude Code session)\n"
        in text
    )
    assert "- Bash `ruff check .` failed (exit 1) (in a Codex session)\n" in text
    assert "Decisions taken:\n- Stream rows with the csv module (in a Codex session)\n" in text
    assert "- Keep the header in export.py (in a Claude Code session)" in text
    as_claude = render_startup(_state("claude", CLAUDE), count, hosts=hosts)
    assert "- Bash `ruff check .` failed (exit 1) (in a Codex session)" in as_claude
    assert "- Stream rows with the csv module (in a Codex session)" in as_claude
    assert count(text) <= STARTUP_MAX_TOKENS and count(as_claude) <= STARTUP_MAX_TOKENS


def test_one_client_only_needs_no_labels() -> None:
    count = get_counter("cl100k_base").count
    text = render_startup(_state("codex", CODEX), count, hosts={CODEX: "codex"})
    assert "(in a" not in text and "(01a2340e, Codex)" in text


def test_decisions_alone_leave_nothing_open() -> None:
    state = _state("codex", CODEX)
    state.open_failures = []
    assert render_startup(state, get_counter("cl100k_base").count) == ""
