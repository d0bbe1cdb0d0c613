"""Recall at the moment of action with the real Claude Code CLI: before an Edit of a file whose
run just failed, PreToolUse tells the model so; before an Edit of a file without
history, nothing. The scripted model's requests show what reached it."""

from __future__ import annotations

import json
from pathlib import Path

from claude_standin import Plan, Standin, serve, text, tool
from helpers import run_cli
from test_real_client import _claude, _run, client_env, standin_env

from ctxd_hook.recall import HEAD


def _body(request: dict[str, object]) -> str:
    return json.dumps(request, ensure_ascii=False)


def _after(requests: list[dict[str, object]], tool_id: str) -> str:
    """The first request that carries the result of `tool_id`, as text."""
    return next(_body(r) for r in requests if f'"tool_use_id": "{tool_id}"' in _body(r))


def test_an_edit_of_a_file_with_an_unresolved_failure_recalls_it(tmp_path: Path) -> None:
    claude = _claude()
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    (project / ".git").mkdir()
    (project / "app.py").write_text("raise SystemExit('config.toml is missing')\n")
    (project / "other.py").write_text("x = 1\n")
    env = client_env(home)
    init = run_cli("init", cwd=project, env=env)
    assert init.returncode == 0, init.stderr
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    (pre,) = settings["hooks"]["PreToolUse"]
    assert "Edit" in pre["matcher"] and "Bash" in pre["matcher"]
    app, other = str(project / "app.py"), str(project / "other.py")
    plans = {
        "rc": Plan([
            [tool("Bash", command="python3 app.py", description="Run the app")],  # fails
            [tool("Edit", file_path=app, old_string="missing", new_string="absent")],
            [tool("Edit", file_path=other, old_string="x = 1", new_string="x = 2")],
            [tool("Bash", command="python3 app.py", description="Run the app again")],
            [text("Done.")],
        ])
    }  # fmt: skip
    standin = Standin(plans)
    server, port = serve(standin)
    try:
        _run(claude, project, standin_env(env, port), "Fix the app [[plan:rc]]")
    finally:
        server.shutdown()
        server.server_close()
    (tmp_path / "requests.json").write_text(json.dumps(standin.requests))
    ran = _after(standin.requests, "toolu_rc_0")
    assert HEAD not in ran  # nothing was recorded about the app before it first ran
    # The edit of app.py, whose run failed: the failure reached the model, as a recorded fact.
    edit = _after(standin.requests, "toolu_rc_1")
    assert edit.count(HEAD) == 1, edit[-3000:]
    recall = edit[edit.index(HEAD) :][:800]
    # The hook keeps no word of the call (it cannot redact): the model has the output above.
    assert "A Bash command that ran this file failed earlier in this session (exit 1)." in recall
    assert "config.toml is missing" not in recall, recall
    # other.py has no history: no recall comes with its edit.
    assert _after(standin.requests, "toolu_rc_2").count(HEAD) == 1, "other.py got a recall"
    # Never the same item twice in a session: the second run recalls nothing new.
    assert _after(standin.requests, "toolu_rc_3").count(HEAD) == 1
