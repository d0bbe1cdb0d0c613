"""summarizer.memory.extract and summarizer.common.text: deterministic, offline extraction from entries."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memory_helpers import PROJECT, entry

from summarizer.cli.commands.demo_session import _FAIL_OUTPUT
from summarizer.common import text as tx
from summarizer.memory import extract as ex

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _bash_failure(
    error: str, command: str = "python -m pytest -q tests/test_export.py"
) -> ex.FailureObs:
    e = entry(
        "tool_failure", tool_name="Bash", error=error, hook_event="PostToolUseFailure",
        detail={"input": {"command": command, "description": "Run the test suite"}},
    )  # fmt: skip
    (obs,) = ex.observe(1, e)
    assert isinstance(obs, ex.FailureObs)
    return obs


# --- failures -------------------------------------------------------------------------------


def test_repeated_pytest_failure_has_one_signature() -> None:
    failures = [_bash_failure(_FAIL_OUTPUT.format(ms=40 + i)) for i in range(3)]
    assert len({f.signature for f in failures}) == 1
    f = failures[0]
    assert f.tool == "Bash"
    assert f.command == "python -m pytest -q tests/test_export.py"
    assert f.error_class.startswith("exit 1: FAILED <path>::test_header_row")
    assert "tests/test_export.py::test_header_row" in f.description
    assert f.cmd_key == "Bash\x1fpython -m pytest -q tests/test_export.py"


def test_different_error_or_command_is_a_different_signature() -> None:
    a = _bash_failure("Exit code 1\nModuleNotFoundError: No module named 'foo'")
    b = _bash_failure("Exit code 2\nModuleNotFoundError: No module named 'foo'")
    c = _bash_failure("Exit code 1\nModuleNotFoundError: No module named 'foo'", command="make")
    assert len({a.signature, b.signature, c.signature}) == 3


@pytest.mark.parametrize(
    ("error", "code", "line"),
    [
        ("Exit code 1\nsome output\nError: boom at line 3", "1", "Error: boom at line 3"),
        ("Exit code 127\nbash: foo: command not found", "127", "bash: foo: command not found"),
        ("Exit code 2\n\n====\n", "2", ""),
        (
            "File has not been read yet. Read it first.",
            "",
            "File has not been read yet. Read it first.",
        ),
        ("interrupted", "", "interrupted"),
        ("Exit code 1\nline one\nE   assert 1 == 2\nmore", "1", "E assert 1 == 2"),
    ],
)
def test_error_summary(error: str, code: str, line: str) -> None:
    assert tx.error_summary(error) == (code, line)


@pytest.mark.parametrize(
    ("raw", "masked"),
    [
        ("FAILED tests/a.py::t - took 0.41s", "FAILED <path>::t - took Ns"),
        ("commit 3f9a2b1c0d missing", "commit <hash> missing"),
        ("open /home/u/x/y.txt failed 3 times", "open <path> failed N times"),
        ("no such file: config.toml", "no such file: <path>"),
    ],
)
def test_mask(raw: str, masked: str) -> None:
    assert tx.mask(raw) == masked


def test_normalize_command() -> None:
    assert tx.normalize_command(f"cd {PROJECT} &&  npm   test", PROJECT) == "npm test"
    assert tx.normalize_command("cat /tmp/pytest-of-u/x1/out.log", "") == "cat <tmp>"


def test_interrupted_result_is_a_failure_and_success_is_observed() -> None:
    e = entry("tool_result", tool_name="Bash", error="interrupted",
              detail={"input": {"command": "sleep 100"}})  # fmt: skip
    (obs,) = ex.observe(1, e)
    assert isinstance(obs, ex.FailureObs) and obs.error_line == "interrupted"
    ok = entry("tool_result", tool_name="Bash", detail={"input": {"command": "sleep 100"}})
    (success,) = ex.observe(2, ok)
    assert isinstance(success, ex.SuccessObs) and success.cmd_key == obs.cmd_key


def test_agent_failure_and_completion_share_the_command_key() -> None:
    ti = {
        "input": {"description": "Write tests", "prompt": "x", "subagent_type": "general-purpose"}
    }
    failed = entry("agent_failed", tool_name="Agent", error="Agent crashed", detail=ti)
    done = entry(
        "agent_complete", tool_name="Agent", output_summary="We decided to use X.", detail=ti
    )
    (f,) = ex.observe(1, failed)
    (s,) = ex.observe(2, done)  # a subagent's answer is recorded data: no decision from it
    assert isinstance(f, ex.FailureObs) and isinstance(s, ex.SuccessObs) and f.cmd_key == s.cmd_key


@pytest.mark.parametrize(
    ("edits", "verb", "expected"),
    [
        (
            [("src/export.py", "header = ['id', 'amount', 'total']")],
            "the command passed",
            "After editing src/export.py (header = ['id', 'amount', 'total']) the command passed",
        ),
        (
            [("a.py", "x = 1"), ("b.py", "rewritten"), ("a.py", "old")],
            "the command passed",
            "After editing a.py (x = 1) and b.py the command passed",
        ),
        ([], "the command passed", "Re-running without file edits, the command passed"),
    ],
)
def test_prevention_text(edits: list[tuple[str, str]], verb: str, expected: str) -> None:
    assert tx.prevention_text(edits, verb).startswith(expected)


def test_edit_snippet() -> None:
    assert tx.edit_snippet("Edit", {"new_string": "\n  w = csv.writer(out)  # try 2\n"}) == (
        "w = csv.writer(out)"
    )
    assert tx.edit_snippet("MultiEdit", {"edits": [{"new_string": "y = 2"}]}) == "y = 2"
    assert tx.edit_snippet("Write", {"content": "..."}) == "rewritten"


# --- decisions and constraints ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Decision: use SQLite WAL for the index.", ["Use SQLite WAL for the index."]),
        (
            "We decided to keep the API synchronous. Tests pass.",
            ["We decided to keep the API synchronous."],
        ),
        # In the agent's message to the user an imperative is advice; its own choice reads
        # "I'll use", "we use … instead of", "switched to".
        ("Use httpx instead of requests for async calls.", []),
        (
            "I'll use httpx instead of requests for async calls.",
            ["I'll use httpx instead of requests for async calls."],
        ),
        (
            "We're going with CSV only.\n- We will add XLSX later",
            ["We're going with CSV only."],
        ),
        ("Should we use Redis instead of Memcached?", []),
        ("All tests pass. The build is green.", []),
        ("```\n# we decided in code\n```\nNothing else.", []),
    ],
)
def test_decision_sentences(text: str, expected: list[str]) -> None:
    obs = ex.observe(1, entry("stop", hook_event="Stop", text=text, agent_id="main"))
    assert [o.text for o in obs if isinstance(o, ex.DecisionObs)] == expected


def test_decision_key_ignores_case_punctuation_and_label() -> None:
    assert tx.text_key("Decision: Use SQLite WAL.") == tx.text_key("use sqlite wal")


def _prompt_obs(text: str) -> list[ex.Observation]:
    return ex.observe(1, entry("prompt", hook_event="UserPromptSubmit", text=text))


def test_constraints_from_a_prompt() -> None:
    obs = _prompt_obs(
        "Add CSV export. Never touch src/billing_legacy.py. Always run pytest before you commit. "
        "Don't use openpyxl; we only ship CSV."
    )
    rules = [o for o in obs if isinstance(o, ex.ConstraintObs)]
    assert [r.text for r in rules] == [
        "Never touch src/billing_legacy.py.",
        "Always run pytest before you commit.",
        "Don't use openpyxl; we only ship CSV.",
    ]
    assert [r.negative for r in rules] == [True, False, True]
    assert rules[0].head == ("touch", "src/billing_legacy.py")
    assert tx.rule_object(rules[0].text, rules[0].head) == {"src/billing_legacy.py"}
    assert any(isinstance(o, ex.SessionTextObs) and o.field == "prompt" for o in obs)


@pytest.mark.parametrize(
    ("rule", "later", "revoked"),
    [
        ("Never touch src/billing_legacy.py.", "You can edit src/billing_legacy.py now.", True),
        ("Never touch src/billing_legacy.py.", "You can edit src/other.py now.", False),
        ("Don't use openpyxl.", "Feel free to use openpyxl for the xlsx export.", True),
        ("Don't use openpyxl.", "Always use openpyxl.", True),
        ("Always run pytest before you commit.", "Never run pytest before you commit.", True),
        ("Always run pytest before you commit.", "Always run pytest before you commit.", False),
        ("Don't use openpyxl.", "Use pandas for the charts.", False),
    ],
)
def test_revocation_rule(rule: str, later: str, revoked: bool) -> None:
    (constraint,) = [o for o in _prompt_obs(rule) if isinstance(o, ex.ConstraintObs)]
    revocations = [o for o in _prompt_obs(later) if isinstance(o, ex.RevokeObs)]
    hit = any(
        ex.revokes(r, constraint.text, constraint.negative, constraint.head) for r in revocations
    )
    assert hit is revoked


def test_command_expansions_are_not_rules() -> None:
    assert [
        o
        for o in _prompt_obs("<command-name>/clear</command-name> never mind")
        if isinstance(o, ex.ConstraintObs)
    ] == []


def test_explicit_events() -> None:
    def explicit(kind: str, record: dict[str, object]) -> list[ex.Observation]:
        return ex.observe(5, entry(kind, hook_event="CtxdEmit", detail={"kind": kind, **record}))

    (d,) = explicit("decision", {"decision": "Use WAL", "rationale": "readers", "featureId": "F1"})
    assert isinstance(d, ex.DecisionObs) and d.text == "Use WAL (readers)" and d.feature_id == "F1"
    (f,) = explicit("failure", {"description": "Deploy broke", "prevention": "Pin the image"})
    assert (
        isinstance(f, ex.FailureObs) and f.prevention == "Pin the image" and f.source == "explicit"
    )
    (r,) = explicit("constraint", {"revoke": "abc123"})
    assert isinstance(r, ex.RevokeObs) and r.target == "abc123"
    start = explicit("feature_start", {"id": "F1", "name": "Export"})
    assert isinstance(start[0], ex.FeatureObs) and start[0].is_start
    failed = explicit("feature_complete", {"id": "F1", "status": "failed"})
    assert isinstance(failed[1], ex.FailureObs) and failed[1].cmd_key == "feature\x1fF1"
    passed = explicit("feature_complete", {"id": "F1", "status": "completed"})
    assert isinstance(passed[1], ex.SuccessObs) and passed[1].cmd_key == "feature\x1fF1"
    assert explicit("decision", {}) == []


def test_todos_and_tasks() -> None:
    todos = {
        "input": {
            "todos": [
                {"content": "A", "status": "completed"},
                {"content": "B", "status": "pending"},
            ]
        }
    }
    (t,) = [
        o
        for o in ex.observe(1, entry("tool_result", tool_name="TodoWrite", detail=todos))
        if isinstance(o, ex.TodoObs)
    ]
    assert t.op == "replace" and t.items == (("1", "A", "completed"), ("2", "B", "pending"))
    create = {
        "input": {"subject": "Write docs"},
        "response": {"task": {"id": "7", "subject": "Write docs"}},
    }
    (c,) = [
        o
        for o in ex.observe(2, entry("tool_result", tool_name="TaskCreate", detail=create))
        if isinstance(o, ex.TodoObs)
    ]
    assert c.op == "create" and c.items == (("7", "Write docs", "pending"),)
    update = {"input": {"taskId": "7", "status": "completed"}}
    (u,) = [
        o
        for o in ex.observe(3, entry("tool_result", tool_name="TaskUpdate", detail=update))
        if isinstance(o, ex.TodoObs)
    ]
    assert u.op == "update" and u.items == (("7", "", "completed"),)


# --- robustness -----------------------------------------------------------------------------------

TEXT = st.one_of(
    st.text(max_size=300),
    st.sampled_from(["\ud800 lone", "😀" * 200, "Decision: " + "x" * 5000, "never " * 400, ""]),
)
EVENTS = st.sampled_from(
    ["tool_result", "tool_failure", "agent_failed", "agent_complete", "stop", "subagent_stop",
     "post_compact", "prompt", "task_created", "decision", "failure", "constraint",
     "feature_start", "feature_complete", "tool_use", "other"]
)  # fmt: skip
DETAIL = st.one_of(
    st.just(b""),
    st.binary(max_size=50),
    st.builds(
        lambda d: __import__("json").dumps(d).encode(),
        st.dictionaries(st.sampled_from(["input", "response", "id", "kind", "decision",
                                         "description", "revoke", "status", "todos"]),
                        st.one_of(TEXT, st.integers(), st.lists(TEXT, max_size=3),
                                  st.dictionaries(st.sampled_from(["command", "file_path", "todos",
                                                                   "new_string", "taskId"]),
                                                  TEXT, max_size=3)),
                        max_size=5),
    ),
)  # fmt: skip


@SETTINGS
@given(
    event=EVENTS,
    tool=st.sampled_from(["", "Bash", "Edit", "Agent", "TodoWrite", "TaskCreate", "TaskUpdate"]),
    text=TEXT,
    error=TEXT,
    detail=DETAIL,
    hook_event=st.sampled_from(["PostToolUse", "CtxdEmit", "Stop"]),
)
def test_observe_never_raises_and_bounds_texts(
    event: str, tool: str, text: str, error: str, detail: bytes, hook_event: str
) -> None:
    e = entry(event, tool_name=tool, text=text, error=error, output_summary=text,
              description=text[:50], detail=detail, hook_event=hook_event)  # fmt: skip
    for o in ex.observe(3, e):
        for value in (
            vars(o).values() if hasattr(o, "__dict__") else [getattr(o, s) for s in o.__slots__]
        ):
            if isinstance(value, str):
                value.encode("utf-8")  # no lone surrogates reach the index
                assert len(value) <= 3001
