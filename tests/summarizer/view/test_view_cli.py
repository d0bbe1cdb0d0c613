"""`ctxd view`: hostile event text stays text, errors are one line, --open uses the browser."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

from browser import load
from helpers import clean_env, hook_env, payload, run_cli, run_hook

SID = "hostile-0001"
PROBE = "pwned-5521"
HOSTILE = (
    f"<script>console.error('{PROBE}-a')</script>"
    f"<img src=x onerror=\"console.error('{PROBE}-b')\">"
    f"</pre></details></div><script>console.error('{PROBE}-c')</script>"
)


def _hostile_session(state_dir: Path) -> None:
    env = hook_env(state_dir)
    events = [
        payload(session_id=SID, hook_event_name="UserPromptSubmit", prompt=HOSTILE),
        payload(
            session_id=SID,
            hook_event_name="PreToolUse",
            tool_name="Agent",
            tool_use_id="toolu_h1",
            tool_input={
                "description": HOSTILE,
                "prompt": f"AgentId: evil-001\n{HOSTILE}",
                "subagent_type": "general-purpose",
            },
        ),
        payload(
            session_id=SID,
            hook_event_name="PreToolUse",
            tool_name="Bash",
            tool_use_id="toolu_h2",
            tool_input={"command": HOSTILE, "description": HOSTILE},
        ),
        payload(
            session_id=SID,
            hook_event_name="PostToolUseFailure",
            tool_name="Bash",
            tool_use_id="toolu_h2",
            tool_input={"command": HOSTILE, "description": HOSTILE},
            error=f"Exit code 1\n{HOSTILE}",
        ),
        payload(
            session_id=SID,
            hook_event_name="PreToolUse",
            tool_name="Read",
            tool_use_id="toolu_h3",
            tool_input={"file_path": f"/p/{HOSTILE}.py"},
        ),
    ]
    for event in events:
        assert run_hook(event, env).returncode == 0


def test_hostile_text_is_escaped_and_never_runs(state_dir: Path, tmp_path: Path) -> None:
    _hostile_session(state_dir)
    page = tmp_path / "hostile.html"
    out = run_cli("view", SID, "-o", str(page), state_dir=state_dir)
    assert out.returncode == 0, out.stderr
    text = page.read_text()
    assert PROBE in text  # the text is on the page…
    assert "<script>console.error" not in text  # …but never as markup
    assert "<img src=x" not in text
    assert text.count("<script") == 1  # the page's own script only
    loaded = load(page, tmp_path / "b")
    assert not [line for line in loaded.console if PROBE in line]
    assert loaded.console == []
    assert loaded.dom.count("<script") == 1
    assert loaded.dom.count("<img") == 0
    assert "&lt;script&gt;console.error(" in loaded.dom  # shown as text in the browser


def test_default_output_is_private_under_the_state_dir(state_dir: Path) -> None:
    _hostile_session(state_dir)
    out = run_cli("view", SID, state_dir=state_dir)
    assert out.returncode == 0, out.stderr
    page = Path(out.stdout.strip())
    assert page == state_dir / "pages" / f"{SID}.html"
    assert stat.S_IMODE(page.stat().st_mode) == 0o600
    assert stat.S_IMODE(page.parent.stat().st_mode) == 0o700


def test_open_hands_the_page_to_the_browser(state_dir: Path, tmp_path: Path) -> None:
    _hostile_session(state_dir)
    record = tmp_path / "opened.json"
    opener = tmp_path / "fake-browser"
    opener.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(record)!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
    )
    opener.chmod(0o755)
    env = clean_env(BROWSER=f"{opener} %s", DISPLAY="")
    page = tmp_path / "out" / "p.html"
    out = run_cli("view", SID, "-o", str(page), "--open", state_dir=state_dir, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(record.read_text()) == [page.resolve().as_uri()]


def test_no_state_is_one_line_and_creates_nothing(tmp_path: Path) -> None:
    project = tmp_path / "empty"
    project.mkdir()
    (project / ".git").mkdir()
    env = {k: v for k, v in clean_env().items() if not k.startswith("CLAUDE")}
    out = run_cli("view", "abc", cwd=project, env=env)
    assert out.returncode == 1
    assert len(out.stderr.strip().splitlines()) == 1
    assert "no ctxd state in" in out.stderr and "ctxd init" in out.stderr
    assert os.listdir(project) == [".git"]


def test_unknown_session_is_one_line(state_dir: Path) -> None:
    _hostile_session(state_dir)
    out = run_cli("view", "nosuch", state_dir=state_dir)
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1 and "ctxd sessions" in out.stderr
