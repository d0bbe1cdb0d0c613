"""What earlier versions installed still records, and what older plugin copies call still answers.

Before the hook had a package of its own, `ctxd init` installed `…/indexer/run_hook.py` (and,
earlier, `…/indexer/hook.py` run as a script) in the settings of Claude Code and Codex, and the
Claude Code plugin's delegate ran `from indexer.hook import respond` in the installed ctxd. The
stand-ins at those paths run the hook from ctxd_hook/ by its path, in a checkout and in an
installed layout (ctxd_hook/ beside indexer/).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, clean_env, hook_env, payload, spool_lines
from test_plugin import _with_memory

EARLIER = [
    ["-I", "-S", str(REPO / "indexer" / "run_hook.py")],
    ["-I", "-S", str(REPO / "indexer" / "hook.py")],
    ["-m", "indexer.hook"],
]
# The delegate of the plugin before the hook had a package of its own, as it ran in the
# installed ctxd's interpreter (its site-packages, if known, in argv[2:]).
_RESPOND_BEFORE = (
    "import sys\n"
    "sys.path.extend(sys.argv[2:])\n"
    "from indexer.hook import respond\n"
    "respond(sys.stdin.buffer.read(), sys.argv[1])\n"
)


def _run(
    argv: list[str], data: bytes, env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, *argv],
        input=data,
        env=env,
        cwd=cwd,
        capture_output=True,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize("argv", EARLIER, ids=["indexer/run_hook.py", "indexer/hook.py", "-m"])
def test_a_hook_installed_by_an_earlier_version_still_records(
    tmp_path: Path, argv: list[str]
) -> None:
    state = tmp_path / "state"
    data = payload(hook_event_name="PostToolUse", tool_name="Bash", tool_use_id="toolu_old1")
    done = _run(argv, data, hook_env(state), REPO)
    assert done.returncode == 0 and done.stdout == b"", done.stderr
    [line] = spool_lines(state)
    assert json.loads(line)["event"]["tool_use_id"] == "toolu_old1"


def test_an_earlier_codex_hook_keeps_its_host(tmp_path: Path) -> None:
    state = tmp_path / "state"
    argv = [*EARLIER[0], "--host", "codex"]
    done = _run(argv, payload(hook_event_name="Stop"), hook_env(state), REPO)
    assert done.returncode == 0, done.stderr
    [line] = spool_lines(state)
    assert json.loads(line)["host"] == "codex"


def test_the_stand_in_finds_the_hook_beside_it_when_installed(tmp_path: Path) -> None:
    # A wheel installs ctxd_hook/ beside indexer/ in site-packages (no plugin/ folder there).
    site = tmp_path / "site-packages"
    (site / "indexer").mkdir(parents=True)
    shutil.copy(REPO / "indexer" / "run_hook.py", site / "indexer" / "run_hook.py")
    hook = REPO / "plugin" / "ctxd_hook"
    shutil.copytree(hook, site / "ctxd_hook", ignore=shutil.ignore_patterns("__pycache__"))
    state = tmp_path / "state"
    argv = ["-I", "-S", str(site / "indexer" / "run_hook.py")]
    data = payload(hook_event_name="UserPromptSubmit", prompt="hi")
    done = _run(argv, data, hook_env(state), tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(spool_lines(state)) == 1


def test_an_earlier_plugins_delegate_still_gets_the_notes(tmp_path: Path) -> None:
    state = tmp_path / "proj" / ".ctxd"
    _with_memory(state)
    start = payload(session_id="s-7", hook_event_name="SessionStart", source="startup")
    done = subprocess.run(
        [sys.executable, "-I", "-c", _RESPOND_BEFORE, str(state)],
        input=start,
        env=clean_env(),
        capture_output=True,
        check=True,
        timeout=60,
    )
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "never touch the billing module" in context
