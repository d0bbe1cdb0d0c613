"""What ctxd logs never carries an unredacted event: a failure while one line is ingested is
logged without the exception's message (which may quote the line), and the daemon's log file
redacts and bounds everything written to it, tracebacks included."""

from __future__ import annotations

import json
import logging
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxd_hook.hook import build_line
from indexer.config import Config
from indexer.paths import StatePaths
from indexer.prepare import line as prepare
from indexer.redact.logsafe import MAX_RECORD_CHARS, RedactingFormatter, bounded, failure
from indexer.writer.catch_up import catch_up
from summarizer.daemon.service import setup_logging

SEALED = "20200101T00.jsonl"
SECRET = "ghp_" + "Xy7Kd9Lm2Np4Rs6Tv8Wx0Yb1Cf3Gh5Jk7Mn9Q"  # a fake token of a real shape


def _line(n: int, prompt: str) -> bytes:
    event = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    return build_line(json.dumps(event).encode(), 1_600_000_000 + n, 7)


def _quoting_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in normalization whose exception quotes the whole event, as `KeyError(value)` or
    an f-string message would."""
    real = prepare.normalize

    def buggy(payload: Any, **kwargs: Any) -> Any:
        if "token" in payload.prompt:
            raise KeyError(f"no rule for {payload.prompt}")
        return real(payload, **kwargs)

    monkeypatch.setattr(prepare, "normalize", buggy)


def test_an_ingest_failure_is_logged_without_the_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    paths = StatePaths(tmp_path / "state")
    paths.ensure()
    lines = [_line(1, "fix the bug"), _line(2, f"use the token {SECRET} here")]
    (paths.spool / SEALED).write_bytes(b"".join(lines))
    _quoting_bug(monkeypatch)
    with caplog.at_level(logging.INFO):
        stats = catch_up(paths, Config()).stats
    assert (stats.entries, stats.quarantined) == (1, 1)  # the exception path was taken
    assert SECRET not in caplog.text  # the formatted records, exception text included
    messages = [r.getMessage() for r in caplog.records if r.name == "ctxd.ingest"]
    assert len(messages) == 1, messages
    assert messages[0].startswith(f"quarantined {SEALED} line 2 after KeyError in "), messages
    assert messages[0].endswith(" (buggy)"), messages  # where it failed
    assert all(r.exc_info is None for r in caplog.records if r.name == "ctxd.ingest")
    conn = sqlite3.connect(paths.index_db)
    try:
        (error,) = conn.execute("SELECT error FROM quarantine").fetchone()
    finally:
        conn.close()
    assert error.startswith("KeyError: ") and "[REDACTED:" in error and SECRET not in error


def test_failure_names_the_place_not_the_message() -> None:
    try:
        {}[SECRET]
    except KeyError as e:
        text = failure(e)
    assert SECRET not in text
    assert text.startswith("KeyError in ") and "test_failure_names_the_place" in text
    assert failure(ValueError(SECRET)) == "ValueError"  # never raised: no traceback


@pytest.fixture
def daemon_log(tmp_path: Path) -> Iterator[StatePaths]:
    """The daemon's own log setup on a state directory; the root logger restored after."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    paths = StatePaths(tmp_path / "state")
    setup_logging(paths, Config(), to_stderr=False)
    try:
        yield paths
    finally:
        for h in root.handlers[:]:
            if h not in handlers:
                root.removeHandler(h)
                h.close()
        root.setLevel(level)


def test_the_daemon_log_is_redacted_and_bounded(daemon_log: StatePaths) -> None:
    log = logging.getLogger("ctxd.test")
    log.warning("summary command failed (%s)", f"Authorization: Bearer {SECRET}")
    try:
        raise RuntimeError(f"cannot use {SECRET}")
    except RuntimeError:
        log.exception("a library's traceback")
    log.warning("huge %s", "x" * (MAX_RECORD_CHARS * 4))
    for h in logging.getLogger().handlers:
        h.flush()
    text = daemon_log.log.read_text()
    assert "a library's traceback" in text and "Traceback" in text  # the records are there
    assert SECRET not in text
    assert text.count("[REDACTED:") >= 2
    assert max(len(line) for line in text.splitlines()) < MAX_RECORD_CHARS + 200


def test_the_formatter_redacts_decoded_forms() -> None:
    escaped = json.dumps({"prompt": f"key {SECRET}"}).replace("_", "\\u005f")
    record = logging.LogRecord("ctxd", logging.WARNING, __file__, 1, "bad: %s", (escaped,), None)
    out = RedactingFormatter().format(record)
    assert SECRET not in out and SECRET[4:] not in out
    assert bounded("a" * 100, 40) == "a" * 20 + " … [60 characters cut] … " + "a" * 20


def test_a_command_without_handlers_logs_redacted_to_stderr() -> None:
    # What `ctxd` sets up before any command runs (in a process of its own: pytest's handlers
    # would take the records).
    code = (
        "import logging\n"
        "from indexer import redact_last_resort\n"
        "redact_last_resort()\n"
        f"logging.getLogger('ctxd.x').warning('cannot use %s', 'token {SECRET}')\n"
        "logging.getLogger('ctxd.x').info('not shown')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       timeout=60)
    assert r.stderr.startswith("cannot use token [REDACTED:"), r.stderr
    assert SECRET not in r.stderr and "not shown" not in r.stderr
