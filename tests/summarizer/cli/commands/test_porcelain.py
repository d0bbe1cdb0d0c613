"""The command line's manners: version, did-you-mean, grouped help, one-line errors, no state."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, clean_env, hook_env, payload, run_cli, run_hook

S1 = "6b0f3b1e-5c1a-4d8e-9a77-0c2e4f1d9a10"
FIXTURE = REPO / "tests" / "data" / "read" / "session-with-agents" / "events.jsonl"
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


def one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode != 0, proc.stdout
    assert proc.stderr.endswith("\n") and proc.stderr.count("\n") == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "\x1b[" not in proc.stderr  # piped: no colour
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


def feed_fixture(state: Path) -> None:
    for line in FIXTURE.read_bytes().splitlines():
        assert run_hook(line, hook_env(state)).returncode == 0


def test_version() -> None:
    proc = run_cli("--version")
    assert proc.returncode == 0
    assert re.fullmatch(r"ctxd \d+\.\d+\.\d+\S*\n", proc.stdout), proc.stdout


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("statsu",), ("unknown command 'statsu'", "did you mean `status`?", "`ctxd --help`")),
        (("sesions",), ("did you mean `sessions`?",)),
        (("status", "--jsn"), ("did you mean `--json`?", "`ctxd status --help`")),
        (("read", "--agent-id", "main", "--lnes", "3"), ("did you mean `--lines`?",)),
        (("zzzzzz",), ("unknown command 'zzzzzz'",)),
        (("read", "--agent-id", "main", "--format", "jsn"), ("did you mean `json`?",)),
        (("read", "--agent-id", "main", "--format", "xml"), ("use one of json, text",)),
        (("emit", "decisoin", "x"), ("did you mean `decision`?", "`ctxd emit --help`")),
        (("sessions", "--limit", "x"), ("expected a whole number, got 'x'",)),
    ],
)
def test_unknown_commands_and_options_suggest_the_closest(
    args: tuple[str, ...], needles: tuple[str, ...]
) -> None:
    proc = run_cli(*args)
    one_line_error(proc, *needles)
    assert proc.returncode == 2
    assert "choose from" not in proc.stderr  # the list of every command is the help's job


def test_help_groups_commands_by_task() -> None:
    text = run_cli("--help").stdout
    headings = [line for line in text.splitlines() if re.fullmatch(r"[a-z ]+:", line)]
    assert headings[:4] == ["set up:", "look:", "memory:", "maintenance:"], headings
    order = [m.group(1) for m in re.finditer(r"^  ([a-z]+)  ", text, re.M)]
    assert order.index("init") < order.index("status") < order.index("inject")
    assert order.index("inject") < order.index("ingest")
    assert "agents" in order


def test_no_internal_document_names_in_any_help() -> None:
    from summarizer.cli.app import build_parser

    parser = build_parser()
    [sub] = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    texts = [parser.format_help(), *(p.format_help() for p in sub.choices.values())]
    for text in texts:
        assert not re.search(r"\bseed\b|\bissue\b|§|\bI\d{1,2}\b|ARCHITECTURE", text), text


def test_read_usage_shows_agent_id_as_required() -> None:
    usage = run_cli("read", "--help").stdout.split("\n\n")[0]
    assert "--agent-id AGENT_ID" in usage and "[--agent-id" not in usage, usage


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("inject", "--budget", "abc"), ("whole number of tokens", "'abc'")),
        (("read", "--agent-id", "main", "--lines", "x"), ("--lines", "`ctxd read --help`")),
        (("emit", "decision"), ("ctxd emit: error: nothing to record", "ctxd emit decision")),
    ],
)
def test_errors_are_one_line_with_the_fix(
    tmp_path: Path, args: tuple[str, ...], needles: tuple[str, ...]
) -> None:
    proc = run_cli(*args, state_dir=tmp_path / "s")
    one_line_error(proc, *needles)
    assert "_positive" not in proc.stderr and "None" not in proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("sessions",),
        ("sessions", "--json"),
        ("read", "--agent-id", "main"),
        ("resume", "abc"),
        ("status",),
        ("status", "--json"),
        ("inject",),
        ("inject", "--format", "markdown"),
        ("agents", "abc"),
        ("compact",),
        ("rebuild",),
        ("ingest",),
    ],
)
def test_read_commands_in_an_empty_directory_say_so_and_create_nothing(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    empty = tmp_path / "project"
    empty.mkdir()
    proc = run_cli(*args, cwd=empty, env=clean_env())
    one_line_error(proc, f"no ctxd state in {empty / '.ctxd'}", "ctxd init")
    assert proc.stdout == ""
    assert list(empty.iterdir()) == []


def test_demo_refuses_a_state_dir(tmp_path: Path) -> None:
    proc = run_cli("demo", "--state-dir", str(tmp_path / "s"))
    one_line_error(proc, "takes no --state-dir", "ctxd demo --keep")
    assert not (tmp_path / "s").exists()


def test_agents_lists_type_status_instruction_and_counts(tmp_path: Path) -> None:
    state = tmp_path / "state"
    feed_fixture(state)
    proc = run_cli("agents", S1[:8], "--json", state_dir=state)
    assert proc.returncode == 0, proc.stderr
    agents = {a["agent_id"]: a for a in json.loads(proc.stdout)}
    assert set(agents) == {"arch-001", "dev-auth-system"}
    arch, dev = agents["arch-001"], agents["dev-auth-system"]
    assert (arch["agent_type"], arch["status"]) == ("the-architect", "completed")
    assert arch["instruction"].startswith("AgentId: arch-001\nDesign a secure authentication")
    assert (arch["entries"], arch["tool_calls"], arch["failures"]) == (8, 3, 0)
    assert (dev["entries"], dev["failures"]) == (6, 1)
    assert ISO.match(arch["started"]) and ISO.match(arch["last_activity"])
    text = run_cli("agents", S1, state_dir=state).stdout
    assert "dev-auth-system  the-developer  completed  6 events, 2 tool calls, 1 failures" in text
    assert "\x1b[" not in text  # piped: no colour
    one_line_error(run_cli("agents", "ffff", state_dir=state), "ctxd sessions")


def test_resume_says_how_many_agents_it_left_out(tmp_path: Path) -> None:
    state = tmp_path / "state"
    session = "0a1b2c3d-0000-4000-8000-000000000001"
    run_hook(payload(session_id=session, hook_event_name="SessionStart"), hook_env(state))
    for i in range(13):
        start = payload(
            session_id=session,
            hook_event_name="SubagentStart",
            agent_id=f"a{i:016x}",
            agent_type="Explore",
        )
        assert run_hook(start, hook_env(state)).returncode == 0
    text = run_cli("resume", session, state_dir=state).stdout
    assert "- +3 more (`ctxd agents 0a1b2c3d-0000-4000-8000-000000000001` lists them all)" in text
    listed = run_cli("agents", session, "--json", state_dir=state).stdout
    assert len(json.loads(listed)) == 13


def test_status_json_times_are_iso_utc(tmp_path: Path) -> None:
    state = tmp_path / "state"
    feed_fixture(state)
    assert run_cli("start", state_dir=state).returncode == 0
    try:
        from tests.helpers import poll

        def running() -> dict[str, object] | None:
            out = json.loads(run_cli("status", "--json", state_dir=state).stdout)
            daemon = out["daemon"]
            return out if daemon and daemon.get("heartbeat") and out["last_ingest"] else None

        report = poll(running, timeout=60)
    finally:
        assert run_cli("stop", state_dir=state).returncode == 0
    daemon = report["daemon"]
    assert isinstance(daemon, dict)
    for key in ("started", "heartbeat"):
        assert isinstance(daemon[key], str) and ISO.match(daemon[key]), daemon
    assert ISO.match(str(report["last_ingest"]))


def test_the_hook_and_sessionstart_never_load_tqdm_or_the_progress_code() -> None:
    code = (
        "import sys, ctxd_hook.hook, summarizer.resume.hook\n"
        "bad = [m for m in sys.modules if m == 'rich' or m.startswith(('rich.', 'tqdm'))"
        " or m == 'summarizer.cli.terminal.progress']\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr


def test_a_quick_read_command_does_not_load_tqdm(tmp_path: Path) -> None:
    state = tmp_path / "state"
    feed_fixture(state)
    assert run_cli("ingest", state_dir=state).returncode == 0
    env = hook_env(state, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "summarizer.cli.app", "read", "--agent-id",
         "arch-001"],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert not re.search(r"\|\s+tqdm\b", proc.stderr)


def _epoch_like(value: object, where: str = "") -> list[str]:
    """Paths of numbers that look like epoch seconds, milliseconds or nanoseconds."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _epoch_like(v, f"{where}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _epoch_like(v, f"{where}[{i}]")]
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 1e9:
        return [f"{where}={value}"]
    return []


def test_json_outputs_carry_iso_times_only(tmp_path: Path) -> None:
    from tests.helpers import poll

    state = tmp_path / "state"
    feed_fixture(state)
    pre_compact = payload(session_id=S1, hook_event_name="PreCompact", trigger="manual")
    assert run_hook(pre_compact, hook_env(state)).returncode == 0
    saved = state / "resume" / S1 / "precompact_state.json"
    poll(saved.exists, timeout=120)  # built by the detached builder the hook starts
    for args in (("status", "--json"), ("sessions", "--json"), ("agents", S1, "--json"),
                 ("resume", S1, "--json")):  # fmt: skip
        proc = run_cli(*args, state_dir=state)
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        assert _epoch_like(out) == [], args
    resume = json.loads(run_cli("resume", S1, "--json", state_dir=state).stdout)
    assert ISO.match(resume["resume_state"]["covers"])
