"""The real `ctxd-hook` (ctxd_hook/hook.py) as Claude Code runs it: one line per event, exit 0 always.

Every test runs the hook as a subprocess (`python -I -S plugin/ctxd_hook/run_hook.py`) with real
files; the indexer side of a scenario runs through the real `ctxd ingest`.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import resource
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    HOOK,
    HOOK_CMD,
    REPO,
    avoid_hour_boundary,
    clean_env,
    hook_env,
    parse_envelope,
    payload,
    query,
    run_cli,
    run_hook,
    spool_files,
    spool_lines,
)

from ctxd_hook.hook import segment_name, state_dir
from indexer.lost_events import failure_count

# How fast the hook is, is measured in bench/bench_hook.py; here a hang fails by run_hook's
# timeout and the duration only appears in failure messages.
FORBIDDEN_MODULES = (
    "msgspec",
    "sqlite3",
    "_sqlite3",
    "tiktoken",
    "tiktoken_ext",
    "watchdog",
    "apscheduler",
    "summarizer",
    "json",  # the hook never parses the payload
)


def timed_hook(
    data: bytes, env: dict[str, str], **kwargs: Any
) -> tuple[subprocess.CompletedProcess[bytes], float]:
    start = time.monotonic()
    proc = run_hook(data, env, **kwargs)
    return proc, time.monotonic() - start


def assert_silent_success(proc: subprocess.CompletedProcess[bytes], elapsed: float) -> None:
    took = f"after {elapsed:.2f} s"  # a diagnosis, not a bound: timing belongs in bench/
    assert proc.returncode == 0, (proc.returncode, took, proc.stderr[-2000:])
    assert proc.stdout == b"", took


def ingest(state: Path) -> str:
    proc = run_cli("ingest", state_dir=state)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout


def only_segment(state: Path) -> Path:
    files = spool_files(state)
    assert len(files) == 1, files
    return files[0]


def expected_line(data: bytes, line: bytes) -> bytes:
    """The exact line the hook should have written for `data`, given the line it wrote: the
    envelope's head, the payload with its raw line breaks as spaces, "}" and b"\n" (written
    out here, not with the hook's build_line)."""
    env = json.loads(line[: line.index(b',"event":')] + b"}")
    body = data.strip().replace(b"\r", b" ").replace(b"\n", b" ")
    return b'{"ctxd":1,"ts_ns":%d,"pid":%d,"event":%s}\n' % (env["ts_ns"], env["pid"], body)


# --- the normal path ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_use_id": "toolu_01A",
            "tool_input": {"command": "npm test", "description": "Run tests"},
        },
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "Read",
            "tool_use_id": "toolu_01B",
            "tool_input": {"file_path": "/home/dev/app/x.py"},
            "tool_response": {"type": "text", "file": {"filePath": "/home/dev/app/x.py"}},
        },
        {
            "hook_event_name": "PostToolUseFailure",
            "tool_name": "Bash",
            "tool_use_id": "toolu_01C",
            "tool_input": {"command": "false"},
            "error": "Exit code 1\n",
        },
        {"hook_event_name": "UserPromptSubmit", "prompt": "fix the failing test"},
        {"hook_event_name": "Notification", "message": "Claude needs your permission to use Bash"},
        {"hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": "Done."},
        {"hook_event_name": "SubagentStop", "agent_id": "a1b2c3", "agent_type": "Explore"},
        {"hook_event_name": "PreCompact", "trigger": "auto", "custom_instructions": ""},
        {"hook_event_name": "SessionEnd", "reason": "clear"},
    ],
    ids=lambda f: f["hook_event_name"],
)
def test_event_appends_one_envelope_line_and_prints_nothing(state_dir: Path, fields: dict) -> None:
    avoid_hour_boundary(5)
    data = payload(**fields)
    proc, elapsed = timed_hook(data, hook_env(state_dir))
    assert_silent_success(proc, elapsed)
    assert proc.stderr == b""
    seg = only_segment(state_dir)
    content = seg.read_bytes()
    assert content.endswith(b"\n") and content.count(b"\n") == 1
    env = parse_envelope(content[:-1])
    assert env["event"] == json.loads(data)
    assert seg.name == segment_name(env["ts_ns"])
    assert content == expected_line(data, content)


def test_envelope_format_pid_ts_and_newlines(state_dir: Path) -> None:
    """Pretty-printed JSON (raw LF and CRLF between tokens) becomes one valid line."""
    avoid_hour_boundary(5)
    record = {
        "session_id": "abc-123",
        "hook_event_name": "PostToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": "/p/a.txt", "content": "line1\nline2\r\n\u2028end"},
        "tool_response": {"success": True},
    }
    data = json.dumps(record, indent=2, ensure_ascii=False).replace("\n", "\r\n").encode() + b"\n"
    assert data.count(b"\n") > 5
    before = time.time_ns()
    proc = subprocess.Popen(
        HOOK_CMD,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=hook_env(state_dir),
    )
    out, err = proc.communicate(data, timeout=30)
    after = time.time_ns()
    assert proc.returncode == 0 and out == b"" and err == b""
    content = only_segment(state_dir).read_bytes()
    assert content.count(b"\n") == 1 and b"\r" not in content
    env = parse_envelope(content[:-1])
    assert env["pid"] == proc.pid
    assert before <= env["ts_ns"] <= after
    assert env["event"] == record  # U+2028 and escaped newlines inside strings are untouched
    body = data.strip().replace(b"\r", b" ").replace(b"\n", b" ")
    head = b'{"ctxd":1,"ts_ns":%d,"pid":%d,"event":' % (env["ts_ns"], proc.pid)
    assert content == head + body + b"}\n"


def test_consecutive_events_append_in_order(state_dir: Path) -> None:
    avoid_hour_boundary(10)
    ids = [f"toolu_{i:03d}" for i in range(5)]
    for tool_use_id in ids:
        proc = run_hook(payload(tool_name="Bash", tool_use_id=tool_use_id), hook_env(state_dir))
        assert proc.returncode == 0
    lines = spool_lines(state_dir)
    assert [parse_envelope(line)["event"]["tool_use_id"] for line in lines] == ids
    ts = [parse_envelope(line)["ts_ns"] for line in lines]
    assert ts == sorted(ts)


# --- bad stdin ---------------------------------------------------------------------------


@pytest.mark.parametrize("data", [b"", b" \n\t\r\n  "], ids=["empty", "whitespace"])
def test_empty_stdin_writes_nothing(state_dir: Path, data: bytes) -> None:
    proc, elapsed = timed_hook(data, hook_env(state_dir))
    assert_silent_success(proc, elapsed)
    assert not state_dir.exists()


def test_stdin_closed_immediately(state_dir: Path) -> None:
    start = time.monotonic()
    proc = subprocess.run(
        HOOK_CMD,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=hook_env(state_dir),
        timeout=30,
        check=False,
    )
    assert_silent_success(proc, time.monotonic() - start)
    assert not state_dir.exists()


# tests/data/hook/<scenario>/stdin: payloads the hook must store as they are (never parsed).
HOOK_DATA = Path(__file__).resolve().parents[1] / "data" / "hook"
BAD_PAYLOADS = {p.name: (p / "stdin").read_bytes() for p in sorted(HOOK_DATA.iterdir())}


@pytest.mark.parametrize("name", list(BAD_PAYLOADS))
def test_bad_payload_is_stored_raw_then_quarantined(state_dir: Path, name: str) -> None:
    """The hook never parses: bad bytes go to the spool as they are; ingest quarantines them."""
    avoid_hour_boundary(10)
    data = BAD_PAYLOADS[name]
    proc, elapsed = timed_hook(data, hook_env(state_dir))
    assert_silent_success(proc, elapsed)
    content = only_segment(state_dir).read_bytes()
    assert content.count(b"\n") == 1
    line = content[:-1]
    assert content == expected_line(data, line)
    body = data.strip().replace(b"\r", b" ").replace(b"\n", b" ")
    assert line.endswith(body + b"}")  # nothing lost: every byte of the payload is kept

    # A good event after it is unaffected, and ingest puts only the bad line in quarantine.
    good = payload(tool_name="Bash", tool_use_id="toolu_good")
    assert run_hook(good, hook_env(state_dir)).returncode == 0
    out = ingest(state_dir)
    assert "indexed 1 entries from 2 lines" in out and "1 quarantined" in out
    rows = query(state_dir, "SELECT name, offset, line_no, error, raw FROM quarantine")
    assert len(rows) == 1
    seg_name, offset, line_no, error, raw = rows[0]
    assert (seg_name, offset, line_no) == (only_segment(state_dir).name, 0, 1)
    assert error
    assert body in bytes(raw)
    assert query(state_dir, "SELECT tool_use_id FROM entries") == [("toolu_good",)]


def test_twenty_megabyte_payload_is_one_whole_line(state_dir: Path) -> None:
    avoid_hour_boundary(15)
    big = "x" * (20 * 1024 * 1024)
    data = payload(
        hook_event_name="PostToolUse",
        tool_name="Bash",
        tool_use_id="toolu_big",
        tool_input={"command": "cat huge.log"},
        tool_response={"stdout": big, "stderr": "", "interrupted": False},
    )
    assert len(data) > 20 * 1024 * 1024
    proc, elapsed = timed_hook(data, hook_env(state_dir), timeout=60)
    assert_silent_success(proc, elapsed)
    content = only_segment(state_dir).read_bytes()
    assert content.count(b"\n") == 1
    expected = expected_line(data, content[:80])
    assert len(content) == len(expected)
    assert hashlib.sha256(content).digest() == hashlib.sha256(expected).digest()

    out = ingest(state_dir)
    assert "indexed 1 entries from 1 lines" in out and "0 quarantined" in out
    ((summary,),) = query(state_dir, "SELECT output_summary FROM entries")
    assert 0 < len(summary) <= 1000


# --- state directory problems --------------------------------------------------------------


def test_state_dir_below_a_regular_file(tmp_path: Path) -> None:
    """mkdir fails with ENOTDIR (works as root too, unlike permission bits)."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_bytes(b"keep")
    proc, elapsed = timed_hook(payload(), hook_env(blocker / "x" / "state"))
    assert_silent_success(proc, elapsed)
    assert blocker.read_bytes() == b"keep"
    assert list(tmp_path.iterdir()) == [blocker]  # nothing written anywhere else either


@pytest.mark.skipif(
    os.geteuid() == 0,
    reason="root ignores permission bits; "
    "see test_state_dir_below_a_regular_file and test_read_only_filesystem",
)
def test_unwritable_state_dir_chmod(state_dir: Path) -> None:
    (state_dir / "spool").mkdir(parents=True)
    os.chmod(state_dir / "spool", 0o500)
    try:
        proc, elapsed = timed_hook(payload(), hook_env(state_dir))
        assert_silent_success(proc, elapsed)
        assert list((state_dir / "spool").iterdir()) == []
    finally:
        os.chmod(state_dir / "spool", 0o700)


def test_segment_path_is_a_directory(state_dir: Path) -> None:
    """open() fails with EISDIR: the hook gives up silently instead of failing the agent."""
    avoid_hour_boundary(5)
    segment = state_dir / "spool" / segment_name(time.time_ns())
    (segment / "inside").mkdir(parents=True)
    proc, elapsed = timed_hook(payload(), hook_env(state_dir))
    assert_silent_success(proc, elapsed)
    assert proc.stderr == b""
    # Nothing was written but the failure count: no other segment, no file in or beside the
    # directory.
    assert [p.relative_to(state_dir) for p in sorted(state_dir.rglob("*"))] == [
        Path("hook-failures"),
        Path("spool"),
        segment.relative_to(state_dir),
        (segment / "inside").relative_to(state_dir),
    ]
    assert failure_count(str(state_dir)) == 1
    # And the hook is not stuck on it: once the directory is gone, the next event is written.
    (segment / "inside").rmdir()
    segment.rmdir()
    data = payload(tool_name="Bash", tool_use_id="toolu_after_dir")
    proc, elapsed = timed_hook(data, hook_env(state_dir))
    assert_silent_success(proc, elapsed)
    assert [parse_envelope(x)["event"]["tool_use_id"] for x in spool_lines(state_dir)] == [
        "toolu_after_dir"
    ]


@pytest.mark.parametrize("umask", [0o022, 0o000, 0o077])
def test_missing_state_dir_is_created_private(tmp_path: Path, umask: int) -> None:
    state = tmp_path / "deep" / "er" / "state"
    proc, elapsed = timed_hook(payload(), hook_env(state), preexec_fn=lambda: os.umask(umask))
    assert_silent_success(proc, elapsed)
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert stat.S_IMODE((state / "spool").stat().st_mode) == 0o700
    seg = only_segment(state)
    assert stat.S_IMODE(seg.lstat().st_mode) == 0o600
    assert seg.read_bytes().count(b"\n") == 1


def test_symlinked_segment_is_not_followed(state_dir: Path, tmp_path: Path) -> None:
    avoid_hour_boundary(5)
    target = tmp_path / "victim.txt"
    target.write_bytes(b"do not append here\n")
    spool = state_dir / "spool"
    spool.mkdir(parents=True)
    link = spool / segment_name(time.time_ns())
    link.symlink_to(target)
    proc, elapsed = timed_hook(payload(), hook_env(state_dir))
    assert_silent_success(proc, elapsed)
    assert target.read_bytes() == b"do not append here\n"
    assert link.is_symlink()


def test_torn_previous_line_gets_its_own_line(state_dir: Path) -> None:
    """A hook killed mid-write left no b"\\n": the next line starts with one (I2)."""
    avoid_hour_boundary(10)
    spool = state_dir / "spool"
    spool.mkdir(parents=True)
    seg = spool / segment_name(time.time_ns())
    torn = b'{"ctxd":1,"ts_ns":1,"pid":1,"event":{"session_id":"s1","hook_event_na'
    seg.write_bytes(torn)
    data = payload(tool_name="Bash", tool_use_id="toolu_after_tear")
    proc, elapsed = timed_hook(data, hook_env(state_dir))
    assert_silent_success(proc, elapsed)
    content = seg.read_bytes()
    assert content.startswith(torn + b"\n")
    line = content[len(torn) + 1 : -1]
    assert content == torn + b"\n" + expected_line(data, line)
    assert parse_envelope(line)["event"]["tool_use_id"] == "toolu_after_tear"

    out = ingest(state_dir)
    assert "indexed 1 entries" in out and "1 quarantined" in out
    assert query(state_dir, "SELECT tool_use_id FROM entries") == [("toolu_after_tear",)]
    assert query(state_dir, "SELECT offset, line_no FROM quarantine") == [(0, 1)]


# --- full disk, read-only file system, file size limit ---------------------------------------


@contextlib.contextmanager
def tmpfs(mountpoint: Path, size: str, *, read_only: bool = False) -> Iterator[Path]:
    """Mount a tiny tmpfs (root only); skip the test where mounting is not possible."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mountpoint.mkdir(parents=True, exist_ok=True)
    opts = f"size={size},mode=0700" + (",ro" if read_only else "")
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(mountpoint)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=False)


def fill_disk(path: Path) -> None:
    """Write `path` until the file system reports ENOSPC (down to single bytes)."""
    with open(path, "wb", buffering=0) as f:
        for size in (1 << 16, 4096, 1):
            while True:
                try:
                    f.write(b"\0" * size)
                except OSError:
                    break


def test_full_disk(tmp_path: Path) -> None:
    """ENOSPC (maybe after a short write): exit 0 fast; the next hook starts a fresh line."""
    avoid_hour_boundary(15)
    with tmpfs(tmp_path / "mnt", "1m") as mnt:
        state = mnt / "state"
        first = payload(tool_name="Bash", tool_use_id="toolu_1")
        assert run_hook(first, hook_env(state)).returncode == 0
        seg = only_segment(state)
        before = seg.read_bytes()
        fill_disk(mnt / "filler")
        big = payload(
            tool_name="Write",
            tool_use_id="toolu_2",
            tool_input={"file_path": "/a", "content": "y" * 20000},
        )
        proc, elapsed = timed_hook(big, hook_env(state))
        assert_silent_success(proc, elapsed)
        after = seg.read_bytes()
        assert after.startswith(before)
        assert len(after) < len(before) + len(big)  # the line did not fit: nothing or a fragment
        (mnt / "filler").unlink()

        third = payload(tool_name="Bash", tool_use_id="toolu_3")
        proc, elapsed = timed_hook(third, hook_env(state))
        assert_silent_success(proc, elapsed)
        final = seg.read_bytes()
        torn = after[len(before) :]
        sep = b"\n" if torn else b""
        assert final.startswith(after + sep)
        last = final[len(after) + len(sep) : -1]
        assert final == after + sep + expected_line(third, last)

        out = ingest(state)
        ids = {r[0] for r in query(state, "SELECT tool_use_id FROM entries")}
        assert ids == {"toolu_1", "toolu_3"}
        assert f"{1 if torn else 0} quarantined" in out


def test_read_only_filesystem(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro", "64k", read_only=True) as mnt:
        proc, elapsed = timed_hook(payload(), hook_env(mnt / "state"))
        assert_silent_success(proc, elapsed)
        assert list(mnt.iterdir()) == []


def test_file_size_limit_efbig_and_sigxfsz_ignored(state_dir: Path) -> None:
    """RLIMIT_FSIZE makes the write fail with EFBIG; SIGXFSZ (default: kill) must not kill us."""
    avoid_hour_boundary(15)
    assert run_hook(payload(tool_use_id="toolu_1"), hook_env(state_dir)).returncode == 0
    seg = only_segment(state_dir)
    before = seg.read_bytes()
    limit = len(before) + 100

    def limit_file_size() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # what a non-Python parent may leave
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    big = payload(tool_use_id="toolu_2", tool_input={"content": "z" * 5000})
    proc, elapsed = timed_hook(big, hook_env(state_dir), preexec_fn=limit_file_size)
    assert proc.returncode != -signal.SIGXFSZ, "the hook was killed by SIGXFSZ"
    assert_silent_success(proc, elapsed)
    after = seg.read_bytes()
    assert after.startswith(before) and len(after) <= limit

    # The interpreter itself ignores SIGXFSZ (CPython does at start-up; check it still does).
    probe = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            "print(next(l for l in open('/proc/self/status') if l.startswith('SigIgn')))",
        ],
        capture_output=True,
        text=True,
        preexec_fn=limit_file_size,
        check=True,
    )
    ignored = int(probe.stdout.split()[1], 16)
    assert ignored & (1 << (signal.SIGXFSZ - 1)), "SIGXFSZ is not ignored in the hook process"

    proc = run_hook(payload(tool_use_id="toolu_3"), hook_env(state_dir))
    assert proc.returncode == 0
    final = seg.read_bytes()
    torn = after[len(before) :]
    assert final.startswith(after + (b"\n" if torn else b""))
    assert parse_envelope(final.split(b"\n")[-2])["event"]["tool_use_id"] == "toolu_3"


# --- where the state directory is ---------------------------------------------------------


def test_no_environment_at_all_uses_git_root(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    cwd = project / "src" / "pkg"
    cwd.mkdir(parents=True)
    proc, elapsed = timed_hook(payload(), {}, cwd=cwd)
    assert_silent_success(proc, elapsed)
    assert proc.stderr == b""
    state = project / ".ctxd"
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert len(spool_lines(state)) == 1
    assert not (cwd / ".ctxd").exists()


def test_no_environment_and_no_git_uses_cwd(tmp_path: Path) -> None:
    cwd = tmp_path / "plain"
    cwd.mkdir()
    proc, elapsed = timed_hook(payload(), {}, cwd=cwd)
    assert_silent_success(proc, elapsed)
    assert len(spool_lines(cwd / ".ctxd")) == 1


@pytest.mark.parametrize(
    ("env_keys", "git", "expected"),
    [
        (("CTXD_HOME", "CLAUDE_PROJECT_DIR"), True, "home"),
        (("CTXD_HOME",), False, "home"),
        (("CLAUDE_PROJECT_DIR",), True, "claude/.ctxd"),
        ((), True, "repo/.ctxd"),
        ((), False, "repo/sub/.ctxd"),
    ],
)
def test_state_dir_resolution(
    tmp_path: Path, env_keys: tuple[str, ...], git: bool, expected: str
) -> None:
    """$CTXD_HOME, else $CLAUDE_PROJECT_DIR/.ctxd, else <git root>/.ctxd, else <cwd>/.ctxd."""
    cwd = tmp_path / "repo" / "sub"
    cwd.mkdir(parents=True)
    if git:
        (tmp_path / "repo" / ".git").write_text("gitdir: /elsewhere\n")  # a worktree's .git file
    (tmp_path / "claude").mkdir()
    values = {"CTXD_HOME": str(tmp_path / "home"), "CLAUDE_PROJECT_DIR": str(tmp_path / "claude")}
    env = clean_env(**{k: values[k] for k in env_keys})
    proc, elapsed = timed_hook(payload(), env, cwd=cwd)
    assert_silent_success(proc, elapsed)
    written = [p.relative_to(tmp_path) for p in tmp_path.rglob("*.jsonl")]
    assert len(written) == 1
    assert written[0].parent == Path(expected) / "spool"
    assert state_dir(env, str(cwd)) == str(tmp_path / expected)


@pytest.mark.parametrize(
    ("environ", "cwd", "expected"),
    [
        ({"CTXD_HOME": "/h", "CLAUDE_PROJECT_DIR": "/p"}, "/w", "/h"),
        ({"CTXD_HOME": "", "CLAUDE_PROJECT_DIR": "/p"}, "/w", "/p/.ctxd"),
        ({"CLAUDE_PROJECT_DIR": ""}, "/nonexistent/w", "/nonexistent/w/.ctxd"),
        ({}, "/", "/.ctxd"),
    ],
)
def test_state_dir_function(environ: dict[str, str], cwd: str, expected: str) -> None:
    assert state_dir(environ, cwd) == expected


# --- what the hook imports ----------------------------------------------------------------


def imported_modules(importtime_stderr: str) -> set[str]:
    names = set()
    for line in importtime_stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name)
    return names


def test_hook_script_imports_only_a_few_stdlib_modules(state_dir: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-X", "importtime", str(HOOK)],
        input=payload(tool_name="Bash", tool_use_id="toolu_imp"),
        env=hook_env(state_dir),
        capture_output=True,
        check=False,
        timeout=30,
    )
    assert proc.returncode == 0 and proc.stdout == b""
    modules = imported_modules(proc.stderr.decode())
    assert {"os", "fcntl", "time"} <= modules
    top = {m.split(".")[0] for m in modules}
    assert not top & set(FORBIDDEN_MODULES), top & set(FORBIDDEN_MODULES)
    assert "indexer" not in top and "ctxd_hook" not in top and "site" not in top
    # `hook` is ctxd_hook/hook.py itself, imported by the launcher from its cached bytecode;
    # `recall` its module for a Bash or file tool's PreToolUse (stdlib only as well).
    own = {"hook", "recall"}
    stdlib = set(sys.stdlib_module_names) | {"encodings", "_frozen_importlib_external", *own}
    assert top <= stdlib, top - stdlib
    assert len(spool_lines(state_dir)) == 1


def test_the_launcher_runs_the_hook_from_its_cached_bytecode(tmp_path: Path) -> None:
    # Run as a script, the hook would be compiled from source on every event.
    copy = tmp_path / "ctxd_hook"
    copy.mkdir()
    for name in ("run_hook.py", "hook.py"):
        (copy / name).write_bytes((REPO / "plugin" / "ctxd_hook" / name).read_bytes())
    state = tmp_path / "state"
    for n in range(2):
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-X", "importtime", str(copy / "run_hook.py")],
            input=payload(tool_name="Bash", tool_use_id=f"toolu_pyc{n}"),
            env=hook_env(state),
            capture_output=True,
            check=False,
            timeout=30,
        )
        assert proc.returncode == 0 and proc.stdout == b"", proc.stderr
        assert "hook" in imported_modules(proc.stderr.decode())
    assert [p.name for p in (copy / "__pycache__").iterdir()] == [
        f"hook.{sys.implementation.cache_tag}.pyc"
    ]
    assert len(spool_lines(state)) == 2


def test_importing_ctxd_hook_hook_loads_no_third_party_module() -> None:
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import ctxd_hook.hook; "
        "print(repr(sorted(sys.modules)))"
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-c", code, str(REPO / "plugin")],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    modules = ast.literal_eval(proc.stdout)
    top = {m.split(".")[0] for m in modules}
    assert not top & set(FORBIDDEN_MODULES), top & set(FORBIDDEN_MODULES)
    assert [m for m in modules if m.startswith(("indexer", "ctxd_hook"))] == [
        "ctxd_hook",
        "ctxd_hook.hook",
    ]
