"""The plugin journey, as a new user takes it with the real CLI (2.1.330): the product tier.

No `ctxd init`: `claude plugin marketplace add` (a checkout, or a git repository served on
loopback like GitHub serves one) and `claude plugin install ctxd@ctxd` in a fresh HOME, then
headless sessions against the Messages API stand-in. Claude Code's copy of the plugin holds the
plugin's own files only; its MCP server answers before and after the `ctxd` command is installed;
the first session says how to install the command, and that command works with nothing but
Python and pip (offline here, from the test wheelhouse); then the notes come back after
`/compact`, the model searches an earlier session, subagents get their handoff; and after
`claude plugin uninstall` nothing of ctxd is left under ~/.claude but what the CLI itself keeps.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from claude_standin import Plan, Standin, serve, text, tool
from helpers import checkout_copy, clean_env
from installed import BUILD_REQUIREMENTS, fill_wheelhouse, offline_pip_env
from test_plugin import HOOK_FILES
from test_real_client import _claude, _copies, _run
from test_real_client_handoff import HANDOFF, OUTCOME, _first_request
from test_real_client_handoff import _plans as handoff_plans
from test_real_client_mcp import _tool_results

from ctxd_hook import plugin

SERVER = "plugin:ctxd:ctxd"  # how Claude Code names the plugin's MCP server
SEARCH = "mcp__plugin_ctxd_ctxd__search"
# The plugin's files as Claude Code copies them.
SHIPPED = {
    ".claude-plugin/plugin.json",
    "hooks/hooks.json",
    *(f"ctxd_hook/{name}" for name in HOOK_FILES),
}
# What the CLI itself leaves in a copy it no longer uses (it sweeps the copy later).
CLI_MARKS = {".orphaned_at", ".in_use"}
INSTALL = re.compile(r"installs with `([^`]+)`")


def _market(dest: Path, *, leftovers: bool) -> Path:
    """The files a clone of this checkout has (links kept as links, as git keeps them); with
    `leftovers`, also what the README's first command and a build leave in a checkout."""
    checkout_copy(dest)
    if leftovers:
        for junk in (
            ".venv/bin/python3",
            "build/bdist.linux-x86_64/wheel.log",
            "ctxd_claude.egg-info/PKG-INFO",
        ):
            (dest / junk).parent.mkdir(parents=True, exist_ok=True)
            (dest / junk).write_text("left by a build\n")
    return dest


def _base_env(home: Path, bin_dir: Path, *, with_ctxd: bool) -> dict[str, str]:
    """A user's environment: HOME apart, python3 on PATH (bare, run with -I -S by the hook),
    git and the system tools, and (if asked) the `ctxd` command of this checkout's venv."""
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "python3").exists():
        (bin_dir / "python3").symlink_to(sys.executable)
    if with_ctxd and not (bin_dir / "ctxd").exists():
        (bin_dir / "ctxd").symlink_to(Path(sys.executable).parent / "ctxd")
    system = os.pathsep.join(p for p in ("/usr/local/bin", "/usr/bin", "/bin") if Path(p).is_dir())
    env = {
        k: v
        for k, v in clean_env().items()
        if not k.startswith(("ANTHROPIC_", "CLAUDE", "CTXD", "VIRTUAL_ENV", "XDG_"))
    }
    env.update(
        HOME=str(home),
        PATH=f"{bin_dir}{os.pathsep}{system}",
        DISABLE_AUTOUPDATER="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )
    return env


def _cli(env: dict[str, str], *args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [str(_claude()), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def _install(env: dict[str, str], source: str) -> Path:
    """Add the marketplace, install the plugin; Claude Code's copy of it."""
    _cli(env, "plugin", "marketplace", "add", source)
    _cli(env, "plugin", "install", "ctxd@ctxd")
    home = Path(env["HOME"])
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings["enabledPlugins"] == {"ctxd@ctxd": True}
    installed = json.loads((home / ".claude" / "plugins" / "installed_plugins.json").read_text())
    [entry] = installed["plugins"]["ctxd@ctxd"]
    copy = Path(entry["installPath"])
    # Only what the plugin runs: no .venv, build/, *.egg-info, tests or docs of the checkout.
    files = {str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file() or p.is_symlink()}
    assert files == SHIPPED, sorted(files)
    assert not [p for p in copy.rglob("*") if p.is_symlink()]
    return copy


def _mcp_line(env: dict[str, str], project: Path) -> str:
    listed = _cli(env, "mcp", "list", cwd=project)
    return next((ln for ln in listed.splitlines() if ln.startswith(SERVER)), listed)


def _standin_env(env: dict[str, str], port: int) -> dict[str, str]:
    return dict(
        env, ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}", ANTHROPIC_API_KEY="k", IS_SANDBOX="1"
    )


def _run_install_command(command: str, env: dict[str, str], source: str) -> None:
    """Run the command the hint gave, as the user would in a shell: pip offline, from the
    wheelhouse (filled once when a dependency is missing from it)."""

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["sh", "-c", command],
            env=offline_pip_env(HOME=env["HOME"], PATH=env["PATH"]),
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )

    done = run()
    if done.returncode != 0:
        fill_wheelhouse(source, *BUILD_REQUIREMENTS)
        done = run()
    assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-3000:])


def _left_under_claude(home: Path, copy: Path) -> list[str]:
    """What of ctxd is under ~/.claude besides what the CLI keeps itself: its unused copy of
    the plugin (the shipped files and its marks, swept later) and the marketplace's clone
    (until `claude plugin marketplace remove`)."""
    claude = home / ".claude"
    found = []
    for path in claude.rglob("*"):
        rel = path.relative_to(claude)
        if rel.parts[0] in ("projects", "backups", "session-env", "sessions"):
            continue  # Claude Code's transcripts and session records
        if path.suffix == ".pyc" or path.name == "__pycache__":
            found.append(str(rel))
        elif path == copy:
            continue
        elif path.is_relative_to(copy):
            inside = path.relative_to(copy).as_posix()
            if not (
                inside in SHIPPED
                or inside.split("/")[0] in CLI_MARKS
                or any(s.startswith(f"{inside}/") for s in SHIPPED)
            ):
                found.append(str(rel))
        elif any("ctxd" in part for part in rel.parts) and not (
            copy.is_relative_to(path) or rel.parts[:2] == ("plugins", "marketplaces")
        ):
            found.append(str(rel))
    settings = json.loads((claude / "settings.json").read_text())
    settings.pop("extraKnownMarketplaces", None)  # the marketplace, until it is removed
    if "ctxd" in json.dumps(settings):
        found.append(f"settings.json: {settings}")
    return sorted(found)


def test_plugin_from_a_checkout_answers_records_and_hands_back(tmp_path: Path) -> None:
    market = _market(tmp_path / "market", leftovers=True)
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    (project / ".git").mkdir()
    (project / "app.py").write_text("print('hi')\n")
    env = _base_env(home, tmp_path / "bin", with_ctxd=False)
    copy = _install(env, str(market))
    # Before the `ctxd` command is installed the MCP server starts and answers (no tools).
    assert "Connected" in _mcp_line(env, project)

    app = str(project / "app.py")
    plans = {
        "work": Plan(
            [
                [tool("Read", file_path=app)],
                [tool("Bash", command="python3 -c 'print(1)'", description="run it")],
                [text("The kittiwake ledger prints a greeting.")],
            ]
        ),
        "more": Plan([[text("Still fine.")]]),
        "recall": Plan(
            [
                [tool("ToolSearch", query=f"select:{SEARCH}", max_results=5)],
                [tool(SEARCH, query="kittiwake ledger")],
                [text("Found it in the earlier session.")],
            ]
        ),
    }
    standin = Standin(plans)
    server, port = serve(standin)
    try:
        sid = _run(_claude(), project, _standin_env(env, port), "Kittiwake ledger? [[plan:work]]")
        first_run = len(standin.requests)
        # The first session told the model (and the user) how to install the command.
        sent = [json.dumps(b["messages"], ensure_ascii=False) for b in standin.requests[:first_run]]
        commands = {c for s in sent for c in INSTALL.findall(s)}
        assert commands == {plugin.install_command(str(market))}, commands
        assert (project / ".ctxd" / plugin.HINT_SHOWN).exists()
        # It works with nothing but Python and pip: the command is found where it put it.
        _run_install_command(commands.pop(), env, str(market))
        assert "Connected" in _mcp_line(env, project)
        assert _run(_claude(), project, _standin_env(env, port), "/compact", "--resume", sid) == sid
        compacted = len(standin.requests)
        _run(_claude(), project, _standin_env(env, port), "Again [[plan:more]]", "--resume", sid)
        resumed = len(standin.requests)
        _run(_claude(), project, _standin_env(env, port), "What about the ledger? [[plan:recall]]")
    finally:
        server.shutdown()
        server.server_close()
    (tmp_path / "requests.json").write_text(json.dumps(standin.requests))

    # Captured with no `ctxd init`: no settings in the project, the spool in its .ctxd/.
    assert not (project / ".claude").exists() and not (project / ".mcp.json").exists()
    # The notes come back after /compact, exactly one copy each time.
    later = standin.requests[compacted:resumed]
    assert later and all(len(_copies(b)) == 1 for b in later), [_copies(b) for b in later]
    # The model searched the first session through the plugin's MCP server.
    results = [r for b in standin.requests for r in _tool_results(b, "toolu_recall_1")]
    assert results and "**kittiwake** **ledger**" in results[-1], results
    # The installed command reads what the plugin recorded.
    ctxd = Path(plugin.CTXD_VENV.replace("~", str(home))) / "bin" / "ctxd"
    listed = subprocess.run(
        [str(ctxd), "sessions", "--json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    assert sid in [s["session_id"] for s in json.loads(listed.stdout)]

    _cli(env, "plugin", "uninstall", "ctxd@ctxd")
    assert _left_under_claude(home, copy) == []


@contextmanager
def _git_over_http(repos: Path) -> Iterator[str]:
    """Serve the bare repositories in `repos` over smart HTTP on loopback (git http-backend),
    as GitHub serves a repository: Claude Code clones a marketplace shallow."""

    def app(environ: dict[str, Any], start: Any) -> list[bytes]:
        body_length = int(str(environ.get("CONTENT_LENGTH") or 0))
        stream: Any = environ["wsgi.input"]
        body = stream.read(body_length) if body_length else b""
        cgi = {
            "GIT_PROJECT_ROOT": str(repos),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH": os.environ.get("PATH", ""),
            "REMOTE_ADDR": "127.0.0.1",
            **{k: str(environ.get(k, "")) for k in ("PATH_INFO", "QUERY_STRING", "REQUEST_METHOD")},
            "CONTENT_TYPE": str(environ.get("CONTENT_TYPE", "")),
            "GIT_PROTOCOL": str(environ.get("HTTP_GIT_PROTOCOL", "")),
        }
        out = subprocess.run(
            ["git", "http-backend"], input=body, env=cgi, capture_output=True, check=False
        ).stdout
        head, _, rest = out.partition(b"\r\n\r\n")
        status, headers = "200 OK", []
        for line in head.decode().split("\r\n"):
            key, _, value = line.partition(": ")
            if key.lower() == "status":
                status = value
            elif key:
                headers.append((key, value))
        start(status, headers)
        return [rest]

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    httpd = make_server("127.0.0.1", 0, app, handler_class=Quiet)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_plugin_from_a_git_repository_runs_from_claude_codes_copy(tmp_path: Path) -> None:
    source = _market(tmp_path / "src", leftovers=False)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"]):
        subprocess.run(["git", *args], cwd=source, check=True, capture_output=True)
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "ctxd"],
        cwd=source,
        check=True,
    )
    repos = tmp_path / "repos"
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(source), str(repos / "ctxd.git")], check=True
    )
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    (project / ".git").mkdir()
    (project / "app.py").write_text("print('hi')\n")
    bare = _base_env(home, tmp_path / "bare", with_ctxd=False)
    standin = Standin(handoff_plans(project) | {"hello": Plan([[text("Hello.")]])})
    server, port = serve(standin)
    try:
        with _git_over_http(repos) as url:
            copy = _install(bare, f"{url}/ctxd.git")
            assert copy.is_relative_to(home / ".claude" / "plugins" / "cache")
            # Without the command: the hint installs from the repository the marketplace names.
            _run(_claude(), project, _standin_env(bare, port), "Hello [[plan:hello]]")
            sent = json.dumps([b["messages"] for b in standin.requests], ensure_ascii=False)
            assert set(INSTALL.findall(sent)) == {plugin.install_command(f"git+{url}/ctxd.git")}
        # With the command on PATH: subagents get their handoff from its environment, the
        # plugin's copy holding no summarizer.
        env = _standin_env(_base_env(home, tmp_path / "bin", with_ctxd=True), port)
        debug = tmp_path / "debug.log"
        _run(_claude(), project, env, "Scout the code [[plan:first]]")
        _run(_claude(), project, env, "Scout again [[plan:second]]")
    finally:
        server.shutdown()
        server.server_close()
    (tmp_path / "requests.json").write_text(json.dumps(standin.requests))
    ran = [ln for ln in debug.read_text().splitlines() if "Hooks: SubagentStart" in ln]
    assert ran and all(str(copy / "ctxd_hook" / "run_hook.py") in ln for ln in ran), ran
    again = _first_request(standin.requests, "again")
    assert again.count(HANDOFF) == 1 and OUTCOME in again, again[-3000:]

    _cli(bare, "plugin", "uninstall", "ctxd@ctxd")
    assert _left_under_claude(home, copy) == []
    _cli(bare, "plugin", "marketplace", "remove", "ctxd")
    assert not (home / ".claude" / "plugins" / "marketplaces" / "ctxd").exists()
