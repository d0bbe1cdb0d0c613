"""ctxd installed as a Claude Code plugin from a local marketplace, with the real CLI (2.1.330).

No `ctxd init`: `claude plugin marketplace add <copy of this repository>` and `claude plugin
install ctxd@ctxd` in a fresh HOME, then headless sessions against the Messages API stand-in.
Without the `ctxd` command on PATH the hook still records every event and the first
SessionStart says how to install it; with the command installed, the notes come back after
`/compact` through the plugin's hook.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from claude_standin import Plan, Standin, serve, text, tool
from helpers import checkout_copy, clean_env, run_cli
from test_real_client import _claude, _copies, _run

PLUGIN_HINT = "its `ctxd` command is not installed"


def _bin_dir(path: Path, with_ctxd: bool) -> Path:
    """A PATH folder with python3 (this interpreter; the hook runs it with -I -S, so it is a
    bare Python) and, if asked, the installed `ctxd` command."""
    path.mkdir(exist_ok=True)
    python3 = path / "python3"
    if not python3.exists():
        python3.symlink_to(sys.executable)
    ctxd = path / "ctxd"
    if with_ctxd and not ctxd.exists():
        ctxd.symlink_to(Path(sys.executable).parent / "ctxd")
    return path


def _spooled(state: Path) -> list[dict[str, object]]:
    events = []
    for segment in sorted((state / "spool").glob("*.jsonl")):
        for line in segment.read_bytes().splitlines():
            events.append(json.loads(line)["event"])
    return events


def test_plugin_install_records_without_init(tmp_path: Path) -> None:
    claude = _claude()
    market = checkout_copy(tmp_path / "market")
    project, home, bin_dir = tmp_path / "proj", tmp_path / "home", tmp_path / "bin"
    project.mkdir()
    home.mkdir()
    (project / ".git").mkdir()
    (project / "app.py").write_text("print('hi')\n")
    # Only system folders and our python3 on PATH: no `ctxd` command yet.
    system_path = os.pathsep.join(
        p for p in ("/usr/local/bin", "/usr/bin", "/bin") if Path(p).is_dir()
    )
    base_env = {
        k: v for k, v in clean_env().items() if not k.startswith(("ANTHROPIC_", "CLAUDE", "CTXD"))
    }
    base_env.update(
        HOME=str(home),
        PATH=f"{_bin_dir(bin_dir, with_ctxd=False)}{os.pathsep}{system_path}",
        DISABLE_AUTOUPDATER="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )
    for args in (["plugin", "marketplace", "add", str(market)], ["plugin", "install", "ctxd@ctxd"]):
        done = subprocess.run(
            [str(claude), *args],
            env=base_env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings["enabledPlugins"] == {"ctxd@ctxd": True}

    app = str(project / "app.py")
    standin = Standin(
        {
            "work": Plan(
                [
                    [tool("Read", file_path=app)],
                    [tool("Bash", command="python3 -c 'print(1)'", description="run it")],
                    [text("app.py prints a greeting.")],
                ]
            ),
            "more": Plan([[text("Still fine.")]]),
        }
    )
    server, port = serve(standin)
    env = dict(
        base_env,
        ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}",
        ANTHROPIC_API_KEY="test-key",
        IS_SANDBOX="1",
    )
    try:
        sid = _run(claude, project, env, "What does app.py do? [[plan:work]]")
        first_run = len(standin.requests)
        # Now the user installs the command (here: this checkout's, on PATH).
        env["PATH"] = f"{_bin_dir(bin_dir, with_ctxd=True)}{os.pathsep}{system_path}"
        assert _run(claude, project, env, "/compact", "--resume", sid) == sid
        compacted = len(standin.requests)
        _run(claude, project, env, "Check it again [[plan:more]]", "--resume", sid)
    finally:
        server.shutdown()
        server.server_close()

    # Captured with no `ctxd init`: no settings in the project, the spool in its .ctxd/.
    assert not (project / ".claude").exists()
    state = project / ".ctxd"
    events = [e for e in _spooled(state) if e.get("session_id") == sid]
    kinds = [str(e["hook_event_name"]) for e in events]
    for kind in ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "PreCompact"):
        assert kind in kinds, kinds
    assert {e.get("tool_name") for e in events if e["hook_event_name"] == "PostToolUse"} >= {
        "Read",
        "Bash",
    }
    # The first SessionStart told the model (and the user) how to install the command, once.
    sent = [json.dumps(b["messages"], ensure_ascii=False) for b in standin.requests]
    assert any(PLUGIN_HINT in s for s in sent[:first_run]), "no install hint"
    assert (state / "install-hint-shown").exists()
    # With the command installed, the notes come back after /compact (exactly one copy).
    later = [standin.requests[i] for i in range(compacted, len(standin.requests))]
    assert later and all(len(_copies(b)) == 1 for b in later), [_copies(b) for b in later]
    # And the command reads what the plugin recorded.
    listed = run_cli("sessions", "--json", state_dir=state)
    assert listed.returncode == 0, listed.stderr
    assert [s["session_id"] for s in json.loads(listed.stdout)] == [sid]
