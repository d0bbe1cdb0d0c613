"""A realistic multi-agent Claude Code session, modelled on shared/corpus, for demos and tests.

The payload shapes follow the corpus: compact hook JSON with `session_id, transcript_path, cwd,
permission_mode, hook_event_name, …`; `Agent` tool calls with `subagent_type`, SubagentStart/
SubagentStop with Claude Code's own agent ids, tool events inside subagents with `agent_id`,
Bash failures as PostToolUseFailure with `Exit code N`, TodoWrite and Task* todo tools.
The story: add CSV export to a reports page; one test failure repeats three times, then is fixed.
"""

from __future__ import annotations

from typing import Any

DEMO_SESSION_ID = "7b0e2f0c-5d1a-4c3e-9f7a-2b8c6d4e1f90"
PLANNER_CC_ID = "a1b2c3d4e5f60718"
TESTER_CC_ID = "a9f8e7d6c5b40312"

_FAIL_OUTPUT = (
    "Exit code 1\n=================== test session starts ===================\n"
    "collected 12 items\n\ntests/test_export.py F..........\n\n"
    "FAILED tests/test_export.py::test_header_row - AssertionError: assert ['id', 'total'] == "
    "['id', 'amount', 'total']\n========================= 1 failed, 11 passed in 0.{ms}s ====="
)


def demo_session(project_dir: str, session_id: str = DEMO_SESSION_ID) -> list[dict[str, Any]]:
    """The session's hook payloads in the order Claude Code sends them."""
    p = project_dir.rstrip("/")
    transcript = f"/home/dev/.claude/projects/{p.replace('/', '-')}/{session_id}.jsonl"
    seq = iter(range(1, 10_000))

    def base(event: str, **extra: Any) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "session_id": session_id,
            "transcript_path": transcript,
            "cwd": p,
            "permission_mode": "acceptEdits",
            "hook_event_name": event,
        }
        payload.update(extra)
        return payload

    def tool(
        name: str,
        tool_input: dict[str, Any],
        response: Any = None,
        *,
        agent: tuple[str, str] | None = None,
        error: str | None = None,
    ) -> list[dict[str, Any]]:
        tid = f"toolu_01Demo{next(seq):06d}"
        ctx: dict[str, Any] = {"agent_id": agent[0], "agent_type": agent[1]} if agent else {}
        pre = base("PreToolUse", **ctx, tool_name=name, tool_input=tool_input, tool_use_id=tid)
        if error is not None:
            post = base(
                "PostToolUseFailure",
                **ctx,
                tool_name=name,
                tool_input=tool_input,
                tool_use_id=tid,
                error=error,
                is_interrupt=False,
                duration_ms=2140,
            )
        else:
            post = base(
                "PostToolUse",
                **ctx,
                tool_name=name,
                tool_input=tool_input,
                tool_response=response if response is not None else {},
                tool_use_id=tid,
                duration_ms=35,
            )
        return [pre, post]

    def read(path: str, content: str, agent: tuple[str, str] | None = None) -> list[dict[str, Any]]:
        return tool(
            "Read",
            {"file_path": f"{p}/{path}"},
            {
                "type": "text",
                "file": {
                    "filePath": f"{p}/{path}",
                    "content": content,
                    "numLines": content.count("\n") + 1,
                    "startLine": 1,
                    "totalLines": content.count("\n") + 1,
                },
            },
            agent=agent,
        )

    def edit(
        path: str, old: str, new: str, agent: tuple[str, str] | None = None
    ) -> list[dict[str, Any]]:
        return tool(
            "Edit",
            {"file_path": f"{p}/{path}", "old_string": old, "new_string": new},
            {
                "filePath": f"{p}/{path}",
                "oldString": old,
                "newString": new,
                "originalFile": old + "\n",
                "structuredPatch": [],
                "userModified": False,
                "replaceAll": False,
            },
            agent=agent,
        )

    def bash(
        command: str,
        stdout: str | None = None,
        error: str | None = None,
        agent: tuple[str, str] | None = None,
    ) -> list[dict[str, Any]]:
        if error is not None:
            return tool(
                "Bash",
                {"command": command, "description": "Run the test suite"},
                agent=agent,
                error=error,
            )
        return tool(
            "Bash",
            {"command": command, "description": "Run the test suite"},
            {"stdout": stdout or "", "stderr": "", "interrupted": False, "isImage": False},
            agent=agent,
        )

    def todos(items: list[tuple[str, str]]) -> list[dict[str, Any]]:
        todo_list = [
            {"content": c, "status": s, "activeForm": c.replace("Add", "Adding")} for c, s in items
        ]
        return tool("TodoWrite", {"todos": todo_list}, {"oldTodos": [], "newTodos": todo_list})

    planner = (PLANNER_CC_ID, "Plan")
    tester = (TESTER_CC_ID, "general-purpose")
    events: list[dict[str, Any]] = [
        base("SessionStart", source="startup", model="claude-sonnet-4-5"),
        base(
            "UserPromptSubmit",
            prompt=(
                "Add CSV export to the reports page. Never touch the legacy billing module in "
                "src/billing_legacy.py. Always run pytest before you commit."
            ),
            session_title="CSV export for reports",
        ),
    ]
    events += todos(
        [
            ("Add CSV export endpoint", "in_progress"),
            ("Write export tests", "pending"),
            ("Update the reports page button", "pending"),
        ]
    )
    events += read(
        "src/reports.py", "def report_rows(db):\n    return db.query('select * from reports')\n"
    )
    plan_prompt = (
        "AgentId: arch-001\nDesign the CSV export API for the reports page. Keep memory "
        "flat for large reports and do not touch src/billing_legacy.py."
    )
    plan_tid = f"toolu_01Demo{next(seq):06d}"
    events.append(
        base(
            "PreToolUse",
            tool_name="Agent",
            tool_use_id=plan_tid,
            tool_input={
                "description": "Design CSV export",
                "prompt": plan_prompt,
                "subagent_type": "Plan",
            },
        )
    )
    events.append(base("SubagentStart", agent_id=PLANNER_CC_ID, agent_type="Plan"))
    events += read(
        "src/reports.py",
        "def report_rows(db):\n    return db.query('select * from reports')\n",
        agent=planner,
    )
    events += tool(
        "Grep",
        {"pattern": "def report_rows", "path": p},
        {"mode": "files_with_matches", "numFiles": 1, "filenames": [f"{p}/src/reports.py"]},
        agent=planner,
    )
    plan_result = (
        "Decision: stream rows with the stdlib csv module instead of pandas, because "
        "reports can exceed 1 GB and pandas loads everything into memory. "
        "The endpoint will be GET /reports/<id>/export.csv."
    )
    events.append(
        base(
            "SubagentStop",
            agent_id=PLANNER_CC_ID,
            agent_type="Plan",
            stop_hook_active=False,
            agent_transcript_path=f"{transcript[:-6]}/subagents/agent-{PLANNER_CC_ID}.jsonl",
            last_assistant_message=plan_result,
        )
    )
    events.append(
        base(
            "PostToolUse",
            tool_name="Agent",
            tool_use_id=plan_tid,
            tool_input={
                "description": "Design CSV export",
                "prompt": plan_prompt,
                "subagent_type": "Plan",
            },
            tool_response={
                "status": "completed",
                "agentId": PLANNER_CC_ID,
                "agentType": "Plan",
                "content": [{"type": "text", "text": plan_result}],
                "totalToolUseCount": 2,
                "totalDurationMs": 48211,
                "totalTokens": 12450,
                "prompt": plan_prompt,
            },
            duration_ms=48300,
        )
    )
    events += edit("src/reports.py", "def report_rows(db):", "def report_rows(db, stream=False):")
    events += tool(
        "Write",
        {
            "file_path": f"{p}/src/export.py",
            "content": "import csv\n\ndef export_csv(rows, out):\n    w = csv.writer(out)\n",
        },
        {
            "type": "create",
            "filePath": f"{p}/src/export.py",
            "content": "import csv\n",
            "structuredPatch": [],
            "originalFile": None,
        },
    )
    for attempt in range(3):
        events += bash(
            "python -m pytest -q tests/test_export.py", error=_FAIL_OUTPUT.format(ms=40 + attempt)
        )
        if attempt < 2:
            events += edit(
                "src/export.py",
                f"w = csv.writer(out)  # try {attempt}",
                f"w = csv.writer(out, lineterminator='\\n')  # try {attempt + 1}",
            )
    events += edit(
        "src/export.py", "header = ['id', 'total']", "header = ['id', 'amount', 'total']"
    )
    events += bash("python -m pytest -q tests/test_export.py", stdout="12 passed in 0.41s\n")
    events += todos(
        [
            ("Add CSV export endpoint", "completed"),
            ("Write export tests", "in_progress"),
            ("Update the reports page button", "pending"),
        ]
    )
    test_prompt = "Write pytest tests for src/export.py covering empty reports and unicode values."
    test_tid = f"toolu_01Demo{next(seq):06d}"
    test_input = {
        "description": "Write export tests",
        "prompt": test_prompt,
        "subagent_type": "general-purpose",
        "run_in_background": True,
    }
    events.append(
        base("PreToolUse", tool_name="Agent", tool_use_id=test_tid, tool_input=test_input)
    )
    events.append(base("SubagentStart", agent_id=TESTER_CC_ID, agent_type="general-purpose"))
    events.append(
        base(
            "PostToolUse",
            tool_name="Agent",
            tool_use_id=test_tid,
            tool_input=test_input,
            tool_response={
                "isAsync": True,
                "status": "async_launched",
                "agentId": TESTER_CC_ID,
                "description": "Write export tests",
                "prompt": test_prompt,
                "outputFile": f"{p}/.claude/tasks/{TESTER_CC_ID}.output",
            },
        )
    )
    events += read("src/export.py", "import csv\n\ndef export_csv(rows, out):\n", agent=tester)
    events += tool(
        "Write",
        {
            "file_path": f"{p}/tests/test_export_unicode.py",
            "content": "def test_unicode():\n    assert True\n",
        },
        {
            "type": "create",
            "filePath": f"{p}/tests/test_export_unicode.py",
            "content": "",
            "structuredPatch": [],
            "originalFile": None,
        },
        agent=tester,
    )
    events += bash("python -m pytest -q tests/", stdout="14 passed in 0.52s\n", agent=tester)
    events.append(
        base(
            "SubagentStop",
            agent_id=TESTER_CC_ID,
            agent_type="general-purpose",
            stop_hook_active=False,
            last_assistant_message=(
                "Added tests/test_export_unicode.py; all 14 tests pass. We decided to "
                "keep the header order id, amount, total to match the reports table."
            ),
        )
    )
    events.append(
        base(
            "UserPromptSubmit",
            prompt=(
                "Good. Next, wire the export button on the reports page. Don't use openpyxl; "
                "we only ship CSV for now. The API key is "
                "sk-ant-api03-DEMOsecretDEMOsecretDEMOsecret0123456789 if you need it."
            ),
        )
    )
    events += read("web/reports.html", "<button id='export'>Export</button>\n")
    events += edit(
        "web/reports.html",
        "<button id='export'>Export</button>",
        "<a id='export' href='/reports/{{id}}/export.csv'>Export CSV</a>",
    )
    events.append(
        base(
            "Stop",
            stop_hook_active=False,
            last_assistant_message=(
                "CSV export works: GET /reports/<id>/export.csv, as the planner designed it."
                "\n\nDecision: stream rows with the stdlib csv module instead of pandas, "
                "because reports can exceed 1 GB and pandas loads everything into memory. "
                "I decided to keep the endpoint synchronous because exports finish "
                "in under a second. "
                "Remaining: update the reports page button styling."
            ),
        )
    )
    events.append(base("PreCompact", trigger="auto", custom_instructions=""))
    return events
