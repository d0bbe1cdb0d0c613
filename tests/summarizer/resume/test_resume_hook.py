"""End to end: the real hook as subprocesses through a session, PreCompact, SessionStart(compact)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import REPO, poll, run_hook, spool_lines
from hypothesis import given
from hypothesis import strategies as st
from resume_story import (
    IN_PROGRESS_TASK,
    SID,
    Daemons,
    encode,
    make_project,
    project_env,
    session_start,
    story,
)

from summarizer.cli.commands.sessions import default_config_text
from summarizer.common.tokens import get_counter
from summarizer.resume import fastjson, hook_output
from summarizer.resume import hook as resume_hook
from summarizer.resume.hook_config import WANTED, _fast, parse_settings
from summarizer.resume.spool_tail import newest_event_ns

MAX_CHARS = 10000


@pytest.fixture
def daemons() -> Iterator[Daemons]:
    d = Daemons()
    yield d
    d.stop_all()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = make_project(tmp_path / "reports-app")
    (project / ".ctxd").mkdir(mode=0o700)
    # The default 3 s build cap is what bench/bench_session_start.py measures against; a test
    # machine busy with other suites must not turn that into flaky failures here.
    (project / ".ctxd" / "config.toml").write_text(BUILD_CONFIG)
    return project


# No detached builder on PreCompact: these tests exercise the hook's own build path and must
# not race a builder (tests/summarizer/resume/test_handback.py covers the prebuilt path).
BUILD_CONFIG = "[resume]\nbuild_timeout_s = 30.0\nprebuild = false\n"


def _play(project: Path) -> None:
    env = project_env(project)
    for payload in story(project):
        done = run_hook(encode(payload), env, cwd=project)
        # Tool events print nothing, but the recall a PreToolUse may hand back (its own tests:
        # tests/ctxd_hook/test_hook_recall.py).
        recall = done.stdout.startswith(b'{"hookSpecificOutput":{"hookEventName":"PreToolUse"')
        assert done.returncode == 0 and (done.stdout == b"" or recall), done


def _session_start(project: Path, source: str = "compact") -> subprocess.CompletedProcess[bytes]:
    return run_hook(encode(session_start(project, source)), project_env(project), cwd=project)


def _assert_resume_output(stdout: bytes, project: Path) -> str:
    doc = json.loads(stdout)
    assert set(doc) == {"hookSpecificOutput"}
    out = doc["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    text = out["additionalContext"]
    assert 0 < len(text.encode("utf-16-le")) // 2 <= MAX_CHARS
    assert IN_PROGRESS_TASK in text
    # Paths under the project are shown relative to it, the project named once.
    assert f"Files worked on lately (paths under {project}):" in text
    for edited in ("web/reports.html", "src/export.py", "src/reports.py"):
        assert f"- {edited} (edited" in text
    for alarm in ("MUST", "CRITICAL", "MANDATORY", "🚨"):
        assert alarm not in text
    return str(text)


def _state(project: Path) -> dict[str, object]:
    path = project / ".ctxd" / "resume" / SID / "precompact_state.json"
    try:
        return dict(json.loads(path.read_bytes()))
    except (OSError, ValueError):
        return {}


def test_compact_with_daemon_injects_once(project: Path, daemons: Daemons) -> None:
    daemons.start(project / ".ctxd")
    _play(project)
    # Compaction takes seconds in Claude Code; the daemon writes the state meanwhile.
    state = poll(lambda: _state(project).get("trigger") == "pre_compact" and _state(project), 20)
    assert state["confidence"] == "high"
    assert state["current_task"]["content"] == IN_PROGRESS_TASK  # type: ignore[index]
    todos = json.loads((project / ".ctxd" / "sessions" / SID / "todos.json").read_bytes())
    assert IN_PROGRESS_TASK in [t["content"] for t in todos["todos"]]
    first = _session_start(project)
    assert first.returncode == 0
    _assert_resume_output(first.stdout, project)
    second = _session_start(project)
    assert second.returncode == 0 and second.stdout == b""


def test_compact_right_after_precompact_with_daemon(project: Path, daemons: Daemons) -> None:
    """No pause for the daemon: the hook waits for it to index, or uses what it wrote."""
    daemons.start(project / ".ctxd")
    _play(project)
    first = _session_start(project)
    _assert_resume_output(first.stdout, project)
    assert _session_start(project).stdout == b""


def test_compact_without_daemon_builds_state_itself(project: Path) -> None:
    _play(project)
    assert not (project / ".ctxd" / "index.db").exists()
    first = _session_start(project)
    assert first.returncode == 0
    _assert_resume_output(first.stdout, project)
    assert _state(project)["trigger"] == "session_start"
    assert (project / ".ctxd" / "sessions" / SID / "todos.json").exists()
    assert _session_start(project).stdout == b""
    assert _session_start(project, "resume").stdout == b""


def test_startup_prints_nothing_when_nothing_is_known(project: Path) -> None:
    _play(project)
    done = _session_start(project, "startup")
    assert done.returncode == 0 and done.stdout == b""


def test_startup_hands_back_open_tasks_not_the_running_summary(project: Path) -> None:
    """On by default: the open tasks the last session left; never the project's running
    summary, which may describe other sessions."""
    _play(project)
    state_dir = project / ".ctxd"
    (state_dir / "context").mkdir(mode=0o700)
    (state_dir / "context" / "running-summary.json").write_text(
        json.dumps({"summary": "Earlier: CSV export shipped; streaming via csv module."})
    )
    _assert_resume_output(_session_start(project).stdout, project)  # builds the state
    done = run_hook(
        encode(session_start(project, "startup") | {"session_id": "5e55b0b0-0000-4000-8000-0"}),
        project_env(project),
        cwd=project,
    )
    text = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert IN_PROGRESS_TASK in text and "CSV export shipped" not in text
    assert get_counter().count(text) <= 400


def test_source_not_configured_prints_nothing(project: Path) -> None:
    _play(project)
    state_dir = project / ".ctxd"
    (state_dir / "config.toml").write_text('[resume]\ninject_on = ["resume"]\n')
    assert _session_start(project, "compact").stdout == b""


def test_build_timeout_still_hands_back_the_latest_events(project: Path) -> None:
    """Never silent: when the notes cannot be built in time, the latest request and the files
    come from the spool's tail (and the decision log says so)."""
    _play(project)
    (project / ".ctxd" / "config.toml").write_text(
        "[resume]\nbuild_timeout_s = 0.001\nprebuild = false\n"
    )
    done = _session_start(project)
    text = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert text.startswith("ctxd notes for session") and "wire the export button" in text
    assert f"{project / 'src' / 'export.py'} (edited)" in text
    log = (project / ".ctxd" / "resume" / SID / "starts.jsonl").read_text().splitlines()[-1]
    assert "not ready" in json.loads(log)["reason"]


def test_bad_payloads_print_nothing(tmp_path: Path) -> None:
    env = project_env(tmp_path)
    for bad in (
        b"",
        b"not json",
        b'{"hook_event_name":"SessionStart"}',
        b'{"hook_event_name":"SessionStart","session_id":"../x","source":"compact"}',
        b'{"hook_event_name":"SessionStart","session_id":"s1","source":7}',
        b"[1,2]",
    ):
        done = run_hook(bad, env, cwd=tmp_path)
        assert done.returncode == 0 and done.stdout == b"", bad


def test_corrupt_state_is_rebuilt(project: Path) -> None:
    _play(project)
    folder = project / ".ctxd" / "resume" / SID
    folder.mkdir(parents=True, mode=0o700, exist_ok=True)
    (folder / "precompact_state.json").write_text("{not json")
    _assert_resume_output(_session_start(project).stdout, project)


def test_low_confidence_state_is_still_handed_back_after_compaction(project: Path) -> None:
    """Never silent: after a compaction the notes go back whatever the confidence."""
    folder = project / ".ctxd" / "resume" / SID
    folder.mkdir(parents=True, mode=0o700, exist_ok=True)
    (folder / "precompact_state.json").write_text(json.dumps({"confidence": "low"}))
    (folder / "context.md").write_text("something")
    out = json.loads(_session_start(project).stdout)
    assert out["hookSpecificOutput"]["additionalContext"] == "something"


def test_concurrent_session_starts_inject_exactly_once(project: Path) -> None:
    folder = project / ".ctxd" / "resume" / SID
    folder.mkdir(parents=True, mode=0o700, exist_ok=True)
    (folder / "precompact_state.json").write_text(json.dumps({"confidence": "medium"}))
    (folder / "context.md").write_text("Task in progress: a thing.")
    payload = encode(session_start(project, "compact"))
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-S",
                str(Path(resume_hook.__file__).parents[2] / "plugin" / "ctxd_hook" / "run_hook.py"),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=project_env(project),
            cwd=project,
        )
        for _ in range(8)
    ]
    outs = [p.communicate(payload, timeout=30)[0] for p in procs]
    assert sorted(bool(o) for o in outs) == [False] * 7 + [True]


def test_clear_hands_over_the_ended_session(project: Path) -> None:
    env = project_env(project)
    for payload in story(project)[:-1]:
        run_hook(encode(payload), env, cwd=project)
    end = session_start(project, "x")
    end.update(hook_event_name="SessionEnd", reason="clear")
    del end["source"], end["model"]
    run_hook(encode(end), env, cwd=project)
    fresh = session_start(project, "clear", session_id="new-session-after-clear")
    done = run_hook(encode(fresh), env, cwd=project)
    _assert_resume_output(done.stdout, project)


def test_session_start_output_never_raises(tmp_path: Path) -> None:
    # In-process: unreadable state dir, odd config types, a directory where a file should be.
    (tmp_path / "config.toml").write_text('[resume]\ninject_on = "compact"\nmax_chars = "x"\n')
    (tmp_path / "resume" / "s1" / "precompact_state.json").mkdir(parents=True)
    payload = b'{"hook_event_name":"SessionStart","session_id":"s1","source":"compact"}'
    assert resume_hook.session_start_output(payload, str(tmp_path)) == ""
    assert resume_hook.session_start_output(payload, str(tmp_path / "missing")) == ""


def test_cap_counts_utf16_like_claude_code() -> None:
    text = "😀" * 6000  # 12,000 UTF-16 units
    capped = hook_output.cap(text, MAX_CHARS)
    assert len(capped.encode("utf-16-le")) // 2 <= MAX_CHARS
    out = json.loads(hook_output.hook_output("a\n" * 8000))
    assert len(out["hookSpecificOutput"]["additionalContext"]) <= MAX_CHARS


def test_hook_stays_fast_for_non_session_start(project: Path) -> None:
    done = run_hook(encode(story(project)[1]), project_env(project), cwd=project)
    assert done.returncode == 0 and done.stdout == b""  # no context outside SessionStart
    assert len(spool_lines(project / ".ctxd")) == 1  # only the spool line: no resume work
    assert not os.path.exists(project / ".ctxd" / "index.db")


def test_fast_path_imports_only_the_standard_library(project: Path) -> None:
    folder = project / ".ctxd" / "resume" / SID
    folder.mkdir(parents=True, mode=0o700, exist_ok=True)
    (folder / "precompact_state.json").write_text(json.dumps({"confidence": "high"}))
    (folder / "context.md").write_text("Task in progress: a thing.")
    (project / ".ctxd" / "config.toml").write_bytes(default_config_text())
    code = (
        "import site, sys; site.main(); sys.path.append(sys.argv[1]);"
        # What site itself loaded (an editable install's finder imports `re`) is not ours.
        "before = set(sys.modules);"
        "import summarizer.resume.hook as r;"
        "out = r.session_start_output(sys.stdin.buffer.read(), sys.argv[2]);"
        "heavy = {'msgspec', 'sqlite3', 'tiktoken', 'json', 're', 'typing', 'tomllib',"
        " 'threading', 'subprocess', 'indexer.index.store'} & (set(sys.modules) - before);"
        "print(sorted(heavy)); print(out)"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(REPO), str(project / ".ctxd")],
        input=encode(session_start(project, "compact")),
        capture_output=True,
        check=True,
    )
    lines = done.stdout.decode().splitlines()
    assert lines[0] == "[]", done.stderr
    assert "a thing" in json.loads(lines[1])["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize(
    "text",
    [
        "",
        '[resume]\ninject_on = [\n  "compact", # why\n  "resume",\n]\nmax_chars = 9_000\n',
        "[daemon]\nautostart = true # on\n[resume]\ninject_on_startup = true\n",
        '[summarizer]\ncommand = [\n  "claude",\n  "-p",\n]\n[resume]\nbuild_timeout_s = 1e1\n',
        "[resume]\ninject_on = ['a#b', \"c\"]\n",
        '[resume]\n"inject_on" = ["x"]\n',
        'note = """\n[resume]\ninject_on = []\n"""\n',
        "[resume.sub]\ninject_on = 1\n[daemon]\nautostart = false\n",
    ],
)
def test_hook_config_reader_agrees_with_tomllib(text: str) -> None:
    import tomllib

    doc = tomllib.loads(text)
    want = {t: {k: v for k, v in doc.get(t, {}).items() if k in keys} for t, keys in WANTED.items()}
    assert parse_settings(text) == want


def test_hook_config_reads_the_shipped_defaults_without_tomllib() -> None:
    text = default_config_text().decode()
    assert _fast(text) == parse_settings(text)
    assert _fast(text) == {
        "resume": {
            "max_chars": 10000,
            "inject_on": ["compact", "resume", "clear"],
            "inject_on_startup": True,
            "build_timeout_s": 3.0,
            "prebuild": True,
            "subagent_max_tokens": 1500,
        },
        "daemon": {"autostart": False},
    }


def test_hook_config_invalid_toml_raises() -> None:
    with pytest.raises(ValueError):
        parse_settings("[resume\nx = 1\n")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)


@given(json_values)
def test_loads_matches_json(value: object) -> None:
    text = json.dumps(value, ensure_ascii=False)
    assert fastjson.loads(text) == json.loads(text)
    assert fastjson.loads(text.encode()) == value or value != value


@given(st.text(max_size=50))
def test_loads_rejects_what_json_rejects(text: str) -> None:
    try:
        expected = json.loads(text)
    except ValueError:
        with pytest.raises(ValueError):
            fastjson.loads(text)
    else:
        assert fastjson.loads(text) == expected or expected != expected


def test_stale_prebuilt_context_is_rebuilt(project: Path) -> None:
    """A state refreshed mid-session must not be injected after a newer PreCompact."""
    _play(project)
    folder = project / ".ctxd" / "resume" / SID
    folder.mkdir(parents=True, mode=0o700, exist_ok=True)
    old = {"confidence": "high", "covers_ns": 1, "trigger": "compaction"}
    (folder / "precompact_state.json").write_text(json.dumps(old))
    (folder / "context.md").write_text("OLD CONTEXT")
    text = _assert_resume_output(_session_start(project).stdout, project)
    assert "OLD CONTEXT" not in text


def test_spool_tail_finds_the_sessions_newest_relevant_line(tmp_path: Path) -> None:
    from ctxd_hook import hook

    spool = tmp_path / "spool"
    spool.mkdir()

    def put(ts: int, sid: str, event: str, name: str = "20260101T00.jsonl") -> None:
        payload = json.dumps({"session_id": sid, "hook_event_name": event}).encode()
        hook.append_line(str(spool), name, hook.build_line(payload, ts, 1))

    assert newest_event_ns(str(spool), "s1") == 0
    put(100, "s1", "PreToolUse")
    put(200, "s1", "PreCompact")
    put(300, "s2", "PreToolUse")
    put(400, "s1", "PostCompact", "20260101T01.jsonl")
    put(500, "s1", "SessionStart", "20260101T01.jsonl")
    assert newest_event_ns(str(spool), "s1") == 200
    assert newest_event_ns(str(spool), "s2") == 300
    assert newest_event_ns(str(spool), "s3") == 0
    assert newest_event_ns(str(spool), "s1", budget=10) == 0  # outside the tail read
    assert newest_event_ns(str(tmp_path / "missing"), "s1") == 0
