"""The plugin folder ships the hook's own files only, and its hook hands the rest to ctxd.

The hook runs from a copy of plugin/, as Claude Code copies it: no `indexer` or `summarizer`
beside it, and a bare `python3 -I -S`.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, clean_env, payload, run_hook
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from ctxd_hook import hook, plugin
from indexer.lost_events import NOT_PRIVATE, REASONS, losses
from summarizer.cli.commands.demo_session import demo_session
from summarizer.cli.setup.hook_command import HookCommand
from summarizer.cli.setup.install import EVENTS, ctxd_hook_spec

PLUGIN = REPO / "plugin"
PLUGIN_HOOK = HookCommand(("python3", "-I", "-S", "${CLAUDE_PLUGIN_ROOT}/ctxd_hook/run_hook.py"))
# What the plugin runs: the hook's package, plugin/ctxd_hook, which the wheel ships too.
HOOK_FILES = (
    "__init__.py",
    "run_hook.py",
    "hook.py",
    "answers.py",
    "losses.py",
    "recall.py",
    "plugin.py",
    "plugin_mcp.py",
)
INSTALLED = Path(sys.executable).parent  # this venv's bin/, with `ctxd` and `ctxd-hook`


def _version() -> str:
    found = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert found
    return found.group(1)


def test_hooks_json_is_what_init_installs_with_the_plugin_root() -> None:
    doc = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())
    assert doc["hooks"] == ctxd_hook_spec(PLUGIN_HOOK)
    assert set(doc["hooks"]) == set(EVENTS)


def test_manifests_name_version_and_mcp_server() -> None:
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    assert manifest["name"] == "ctxd" and manifest["version"] == _version()
    [entry] = market["plugins"]
    assert (entry["name"], entry["source"], entry["version"]) == ("ctxd", "./plugin", _version())
    assert market["name"] == "ctxd" and market["owner"]["name"]
    server = manifest["mcpServers"]["ctxd"]
    assert [server["command"], *server["args"]] == [
        "python3", "-I", "-S", "${CLAUDE_PLUGIN_ROOT}/ctxd_hook/plugin_mcp.py"
    ]  # fmt: skip


def test_the_plugin_folder_is_its_manifests_and_the_hooks_package() -> None:
    shipped = {
        p.relative_to(PLUGIN).as_posix()
        for p in PLUGIN.rglob("*")
        if "__pycache__" not in p.parts and (p.is_symlink() or p.is_file())
    }
    assert shipped == {
        ".claude-plugin/plugin.json",
        "hooks/hooks.json",
        *(f"ctxd_hook/{name}" for name in HOOK_FILES),
    }
    # Real files, which git keeps as files: a copy of the plugin needs no link dereferenced.
    assert not [p for p in PLUGIN.rglob("*") if p.is_symlink()]
    staged = subprocess.run(
        ["git", "ls-files", "-s", "plugin/ctxd_hook"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert sorted(line.split()[0] for line in staged.splitlines()) == ["100644"] * len(HOOK_FILES)


def _plugin_copy(tmp_path: Path) -> Path:
    """plugin/ as Claude Code copies it (links dereferenced) inside a checkout of ctxd."""
    checkout = tmp_path / "checkout"
    root = checkout / "plugin"
    shutil.copytree(PLUGIN, root, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", checkout / "pyproject.toml")
    return root


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    return project


def _bin(tmp_path: Path, *, with_ctxd: bool) -> str:
    """A PATH of system folders and, if asked, one holding this venv's `ctxd`."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    if with_ctxd and not (folder / "ctxd").exists():
        (folder / "ctxd").symlink_to(INSTALLED / "ctxd")
    return f"{folder}:/usr/bin:/bin"


def _hook(
    root: Path, project: Path, data: bytes, path: str, **extra: str
) -> subprocess.CompletedProcess[bytes]:
    env = clean_env(
        CLAUDE_PLUGIN_ROOT=str(root),
        CLAUDE_PROJECT_DIR=str(project),
        PATH=path,
        HOME=str(root.parents[1] / "home"),
        **extra,
    )
    env.pop("XDG_CACHE_HOME", None)
    return subprocess.run(
        [sys.executable, "-I", "-S", str(root / "ctxd_hook" / "run_hook.py")],
        input=data,
        env=env,
        capture_output=True,
        check=False,
        timeout=60,
    )


def _events(state: Path) -> list[str]:
    lines = b"".join(p.read_bytes() for p in sorted((state / "spool").glob("*.jsonl")))
    return [json.loads(line)["event"]["hook_event_name"] for line in lines.splitlines()]


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def test_plugin_hook_records_and_says_how_to_install_ctxd_once(tmp_path: Path) -> None:
    root = _plugin_copy(tmp_path)
    before = _files(root)
    project = _project(tmp_path)
    start = payload(session_id="s-1", hook_event_name="SessionStart", source="startup")
    first = _hook(root, project, start, _bin(tmp_path, with_ctxd=False))
    assert first.returncode == 0 and first.stderr == b""
    out = json.loads(first.stdout)
    # The command installs from the checkout the plugin lives in, with Python alone.
    command = (
        f"python3 -m venv {plugin.CTXD_VENV} && {plugin.CTXD_VENV}/bin/pip install {root.parent}"
    )
    assert f"`{command}`" in out["systemMessage"]
    assert f"pipx install {root.parent}" in out["systemMessage"]
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    model = out["hookSpecificOutput"]["additionalContext"]
    assert "not installed" in model and command in model
    again = _hook(root, project, start, _bin(tmp_path, with_ctxd=False))
    assert again.returncode == 0 and again.stdout == b""  # once per project
    prompt = payload(session_id="s-1", hook_event_name="UserPromptSubmit", prompt="hi")
    assert _hook(root, project, prompt, _bin(tmp_path, with_ctxd=False)).stdout == b""
    assert _events(project / ".ctxd") == ["SessionStart", "SessionStart", "UserPromptSubmit"]
    # No `ctxd init` put .ctxd/ in .gitignore: the state dir ignores itself.
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == ""
    # Claude Code's copy of the plugin is left as it was: the bytecode went to the user's cache.
    assert _files(root) == before
    cached = tmp_path / "home" / ".cache" / "ctxd" / "pycache"
    assert list(cached.rglob("hook.cpython-*.pyc"))


def _with_memory(state: Path) -> None:
    """A constraint in the project's memory: a new session starts with it."""
    env = clean_env(CTXD_HOME=str(state))
    emit = subprocess.run(
        [str(INSTALLED / "ctxd"), "emit", "constraint", "never touch the billing module"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert emit.returncode == 0, emit.stderr
    compact = subprocess.run(
        [str(INSTALLED / "ctxd"), "compact"], env=env, capture_output=True, check=False
    )
    assert compact.returncode == 0, compact.stderr


def test_the_plugins_copy_counts_an_event_it_could_not_spool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook's loss path imports a module of its own folder: the plugin must ship it."""
    root, project = _plugin_copy(tmp_path), _project(tmp_path)
    state = project / ".ctxd"
    state.mkdir(mode=0o700)
    state.chmod(0o777)  # writable by others: nothing is written through it, the loss is counted
    xdg = tmp_path / "xdg-state"
    data = payload(session_id="s-lost", cwd=str(project), hook_event_name="UserPromptSubmit")
    done = _hook(root, project, data, _bin(tmp_path, with_ctxd=False), XDG_STATE_HOME=str(xdg))
    assert done.returncode == 0 and done.stdout == b"", done.stderr
    assert not (state / "spool").exists()
    monkeypatch.setenv("XDG_STATE_HOME", str(xdg))  # where the count of this state dir is kept
    assert losses(str(state)) == {REASONS[NOT_PRIVATE]: 1}


@pytest.mark.parametrize("where", ["PATH", "its venv"])
def test_session_start_is_answered_by_the_installed_command(tmp_path: Path, where: str) -> None:
    root = _plugin_copy(tmp_path)
    project = _project(tmp_path)
    state = project / ".ctxd"
    _with_memory(state)
    if where == "PATH":
        path = _bin(tmp_path, with_ctxd=True)
    else:  # where the install command puts it; not on PATH (Claude Code started from a launcher)
        venv_bin = Path(plugin.CTXD_VENV.replace("~", str(tmp_path / "home"))) / "bin"
        venv_bin.mkdir(parents=True)
        (venv_bin / "ctxd").symlink_to(INSTALLED / "ctxd")
        path = _bin(tmp_path, with_ctxd=False)
    start = payload(session_id="s-2", hook_event_name="SessionStart", source="startup")
    done = _hook(root, project, start, path)
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "never touch the billing module" in context
    assert not (state / plugin.HINT_SHOWN).exists()


def test_a_ctxd_command_that_is_not_ours_is_not_used(tmp_path: Path) -> None:
    # `ctxd` on PyPI is another project: no `ctxd-hook` beside it.
    root = _plugin_copy(tmp_path)
    project = _project(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "ctxd").write_text(f"#!{sys.executable}\nprint('another ctxd')\n")
    (other / "ctxd").chmod(0o755)
    start = payload(session_id="s-3", hook_event_name="SessionStart", source="startup")
    done = _hook(root, project, start, f"{other}:/usr/bin:/bin")
    assert "install the ctxd command" in json.loads(done.stdout)["systemMessage"]


def test_pips_launcher_for_long_paths_names_the_interpreter(tmp_path: Path) -> None:
    # pip writes `#!/bin/sh` + an exec line when the interpreter's path is long or has spaces.
    bin_dir = tmp_path / "a folder" / "bin"
    bin_dir.mkdir(parents=True)
    script = f"#!/bin/sh\n'''exec' \"{sys.executable}\" \"$0\" \"$@\"\n' '''\nimport sys\n"
    for name in ("ctxd", "ctxd-hook"):
        (bin_dir / name).write_text(script)
        (bin_dir / name).chmod(0o755)
    assert plugin._interpreter(str(bin_dir / "ctxd")) == sys.executable


def test_subagent_handoff_runs_in_the_installed_command(tmp_path: Path) -> None:
    # The plugin's copy holds no summarizer: the Agent call, SubagentStop and SubagentStart
    # are answered by the installed command's environment.
    root = _plugin_copy(tmp_path)
    project = _project(tmp_path)
    path = _bin(tmp_path, with_ctxd=True)
    events = demo_session(str(project))
    stop = next(i for i, e in enumerate(events) if e["hook_event_name"] == "SubagentStop")
    for event in events[: stop + 1]:
        assert _hook(root, project, json.dumps(event).encode(), path).returncode == 0
    account = (project / ".ctxd" / "handoff" / "agents" / "arch-001.md").read_text()
    assert "stream rows with the stdlib csv module" in account
    call = payload(session_id="s-4", hook_event_name="PreToolUse", tool_name="Agent",
                   tool_use_id="toolu_9", tool_input={"description": "d", "subagent_type": "Plan",
                   "prompt": "AgentId: arch-001\nAgain."})  # fmt: skip
    assert _hook(root, project, call, path).stdout == b""
    start = payload(session_id="s-4", hook_event_name="SubagentStart", agent_id="a00000000000009f",
                    agent_type="Plan")  # fmt: skip
    done = _hook(root, project, start, path)
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith(account.strip()[:60])


def test_an_installed_command_is_started_without_site_when_its_packages_are_known(
    tmp_path: Path,
) -> None:
    # A venv as pip leaves it (not editable): bin/python, bin/ctxd, site-packages/ctxd_hook. Site
    # of this python would not find these packages: the handoff printed proves the path given.
    venv = Path(plugin.CTXD_VENV.replace("~", str(tmp_path / "home")))
    packages = venv / "lib" / f"python3.{sys.version_info.minor}" / "site-packages"
    packages.mkdir(parents=True)
    for name in ("indexer", "summarizer"):
        (packages / name).symlink_to(REPO / name)
    (packages / "ctxd_hook").symlink_to(REPO / "plugin" / "ctxd_hook")
    (venv / "bin").mkdir()
    (venv / "bin" / "python").symlink_to(sys.executable)
    for name in ("ctxd", "ctxd-hook"):
        (venv / "bin" / name).write_text(f"#!{venv / 'bin' / 'python'}\n")
        (venv / "bin" / name).chmod(0o755)
    assert plugin._packages_of(str(venv / "bin" / "python")) == str(packages)
    root = _plugin_copy(tmp_path)
    project = _project(tmp_path)
    # arch-001 ran before, and an Agent call names it again (recorded as `ctxd init` does).
    events = demo_session(str(project))
    stop = next(i for i, e in enumerate(events) if e["hook_event_name"] == "SubagentStop")
    call = payload(session_id="s-6", hook_event_name="PreToolUse", tool_name="Agent",
                   tool_use_id="toolu_8", tool_input={"description": "d", "subagent_type": "Plan",
                   "prompt": "AgentId: arch-001\nAgain."})  # fmt: skip
    env = clean_env(CTXD_HOME=str(project / ".ctxd"))
    for data in [json.dumps(e).encode() for e in events[: stop + 1]] + [call]:
        assert run_hook(data, env).returncode == 0
    start = payload(session_id="s-6", hook_event_name="SubagentStart", agent_id="a00000000000008f",
                    agent_type="Plan")  # fmt: skip
    done = _hook(root, project, start, _bin(tmp_path, with_ctxd=False))
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "stream rows with the stdlib csv module" in context


# What plugin 0.1.0 (a copy of the whole checkout) runs in the installed ctxd's interpreter.
_SESSION_START_0_1_0 = (
    "import sys\n"
    "from summarizer.resume.hook import session_start_output\n"
    "sys.stdout.write(session_start_output(sys.stdin.buffer.read(), sys.argv[1]))\n"
)
_PRE_COMPACT_0_1_0 = (
    "import sys\n"
    "from indexer.hook import _prebuild\n"
    "_prebuild(sys.stdin.buffer.read(), sys.argv[1])\n"
)


def test_plugin_0_1_0_copies_still_get_their_answers(tmp_path: Path) -> None:
    state = tmp_path / "proj" / ".ctxd"
    _with_memory(state)
    start = payload(session_id="s-5", hook_event_name="SessionStart", source="startup")
    done = subprocess.run(
        [sys.executable, "-I", "-c", _SESSION_START_0_1_0, str(state)],
        input=start,
        capture_output=True,
        check=True,
    )
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "never touch the billing module" in context
    pre = payload(session_id="s-5", hook_event_name="PreCompact", trigger="manual")
    done = subprocess.run(
        [sys.executable, "-I", "-c", _PRE_COMPACT_0_1_0, str(state)],
        input=pre,
        capture_output=True,
        check=True,
    )
    assert done.stderr == b""


@pytest.mark.parametrize(
    ("fields", "kind"),
    [
        ({"hook_event_name": "SessionStart", "source": "compact"}, "SessionStart"),
        ({"hook_event_name": "PreCompact", "trigger": "auto"}, "PreCompact"),
        ({"hook_event_name": "SubagentStart", "agent_type": "Plan"}, "SubagentStart"),
        ({"hook_event_name": "SubagentStop", "agent_id": "a1"}, "SubagentStop"),
        ({"hook_event_name": "PreToolUse", "tool_name": "Agent"}, "AgentCall"),
        ({"hook_event_name": "PreToolUse", "tool_name": "Task"}, "AgentCall"),
        ({"hook_event_name": "PostToolUseFailure", "tool_name": "Agent"}, "AgentCallFailed"),
        ({"hook_event_name": "PostToolUse", "tool_name": "Agent"}, ""),
        ({"hook_event_name": "PostToolUse", "tool_name": "Read"}, ""),
        # Named inside a string only: not the event.
        ({"hook_event_name": "UserPromptSubmit", "prompt": '"hook_event_name":"PreCompact"'}, ""),
    ],
)
def test_answer_kind(fields: dict[str, str], kind: str) -> None:
    assert hook.answer_kind(payload(**fields)) == kind


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ({"source": "github", "repo": "someone/ctxd"}, "git+https://github.com/someone/ctxd.git"),
        (
            {"source": "github", "repo": "someone/ctxd", "ref": "v0.2"},
            "git+https://github.com/someone/ctxd.git@v0.2",
        ),
        (
            {"source": "git", "url": "https://git.example/ctxd.git"},
            "git+https://git.example/ctxd.git",
        ),
        ({"source": "directory", "path": "/src/ctxd"}, "/src/ctxd"),
        ({"source": "url", "url": "https://example/marketplace.json"}, ""),
    ],
)
def test_install_source_of_a_copy_in_claude_codes_cache(
    tmp_path: Path, source: dict[str, str], expected: str
) -> None:
    plugins = tmp_path / ".claude" / "plugins"
    root = plugins / "cache" / "ctxd" / "ctxd" / "0.1.0"
    root.mkdir(parents=True)
    known = {"ctxd": {"source": source, "installLocation": str(plugins / "marketplaces" / "ctxd")}}
    (plugins / "known_marketplaces.json").write_text(json.dumps(known))
    assert plugin.install_source(str(root)) == expected
    assert plugin.install_source(str(tmp_path / "somewhere" / "else")) == ""


def _mcp_session(root: Path, path: str, project: Path) -> tuple[str, str, list[str]]:
    """(server name, its instructions, its tools) through the MCP SDK's own stdio client."""
    env = clean_env(CLAUDE_PLUGIN_ROOT=str(root), PATH=path, HOME=str(root.parents[1] / "home"))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-I", "-S", str(root / "ctxd_hook" / "plugin_mcp.py")],
        env=env,
        cwd=project,
    )

    async def run() -> tuple[str, str, list[str]]:
        async with Client(params, read_timeout_seconds=60) as client:
            tools = await client.list_tools()
            name = client.server_info.name if client.server_info else ""
            return name, client.instructions or "", [t.name for t in tools.tools]

    return asyncio.run(run())


def test_mcp_server_is_ctxd_mcp_once_installed_and_says_how_until_then(tmp_path: Path) -> None:
    root = _plugin_copy(tmp_path)
    project = _project(tmp_path)
    name, instructions, tools = _mcp_session(root, _bin(tmp_path, with_ctxd=False), project)
    assert (name, tools) == ("ctxd", [])
    assert f"pip install {root.parent}" in instructions
    name, _, tools = _mcp_session(root, _bin(tmp_path, with_ctxd=True), project)
    assert "search" in tools and "decisions" in tools
    assert not (project / ".ctxd").exists()  # a read-only server creates no state
