"""`ctxd inject` and `ctxd status` answer without tiktoken, watchdog or APScheduler when nothing
needs recomputing, and still answer correctly (I12) when something does."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from helpers import REPO, clean_env, payload, run_cli

from ctxd_hook.hook import append_line, build_line, segment_name
from indexer.paths import StatePaths
from summarizer.memory.inject import ContextAgent
from summarizer.memory.inject_cache import CACHE_FILE

HEAVY = ("tiktoken", "watchdog", "apscheduler")
# Runs one CLI command in a fresh interpreter, then reports which heavy modules it imported.
_RUNNER = """
import json, sys
from summarizer.cli.app import main
code = main(sys.argv[2:])
sys.stdout.flush()
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[1].split(",")))
print(json.dumps({"code": code, "heavy": heavy}), file=sys.stderr)
"""


def run_counted(*argv: str) -> tuple[str, list[str]]:
    """Run `ctxd ARGV` in a subprocess; return its stdout and the heavy modules it loaded."""
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, ",".join(HEAVY), *argv],
        env=clean_env(PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, done.stderr
    return done.stdout, list(report["heavy"])


def emit(state: Path, *argv: str) -> None:
    done = run_cli("emit", *argv, "--state-dir", str(state))
    assert done.returncode == 0, done.stderr


def computed(state: Path, feature_id: str | None = None, budget: int = 2000) -> dict[str, Any]:
    """The injection computed from scratch in this process (tiktoken, no cache)."""
    return ContextAgent(state_dir=state, refresh=False).get_injection(feature_id, budget)


def test_inject_answers_from_the_kept_injection_until_the_memory_moves(tmp_path: Path) -> None:
    state = tmp_path / "state"
    emit(state, "decision", "Stream rows with the csv module", "--rationale", "reports are big")
    emit(state, "constraint", "Never touch src/legacy.py")
    assert run_cli("compact", "--state-dir", str(state)).returncode == 0

    out, heavy = run_counted("inject", "--state-dir", str(state))
    assert heavy == []  # the compaction kept the default answer
    first = json.loads(out)
    assert first == computed(state)
    assert "Stream rows with the csv module" in first["decisions"][0]["decision"]

    # A new event in the spool: the kept answer is stale, the command catches up (I12).
    emit(state, "decision", "Ship on Mondays")
    out, heavy = run_counted("inject", "--state-dir", str(state), "--format", "markdown")
    assert "tiktoken" in heavy
    assert "Ship on Mondays" in out
    out, heavy = run_counted("inject", "--state-dir", str(state), "--format", "markdown")
    assert heavy == []
    assert "Ship on Mondays" in out

    # Other flags are other answers: computed once, then kept.
    out, heavy = run_counted("inject", "--state-dir", str(state), "--budget", "120")
    assert "tiktoken" in heavy
    small = json.loads(out)
    assert small == computed(state, budget=120)
    assert small != computed(state)
    again, heavy = run_counted("inject", "--state-dir", str(state), "--budget", "120")
    assert heavy == []
    assert json.loads(again) == small

    # An edited config file is another key: recomputed with the new settings.
    paths = StatePaths(state)
    paths.config.write_text("[summarizer]\ninjection_budget = 100\n")
    out, heavy = run_counted("inject", "--state-dir", str(state))
    assert "tiktoken" in heavy
    assert json.loads(out) == computed(state, budget=100)


def test_a_damaged_cache_file_is_recomputed_not_trusted(tmp_path: Path) -> None:
    state = tmp_path / "state"
    emit(state, "decision", "Use SQLite in WAL mode")
    assert run_cli("compact", "--state-dir", str(state)).returncode == 0
    (StatePaths(state).context / CACHE_FILE).write_text('{"version": 1, "entries": [')
    out, heavy = run_counted("inject", "--state-dir", str(state))
    assert "tiktoken" in heavy
    assert json.loads(out) == computed(state)


def test_status_loads_no_heavy_module(tmp_path: Path) -> None:
    state = tmp_path / "state"
    emit(state, "decision", "Use SQLite in WAL mode")
    assert run_cli("ingest", "--state-dir", str(state)).returncode == 0
    out, heavy = run_counted("status", "--json", "--state-dir", str(state))
    assert heavy == []
    report = json.loads(out)
    assert report["entries"] == 1 and report["lag"] == {"bytes": 0, "lines": 0}
    emit(state, "decision", "Ship on Mondays")  # not indexed yet: status shows the lag
    out, heavy = run_counted("status", "--json", "--state-dir", str(state))
    assert heavy == []
    assert json.loads(out)["lag"]["lines"] == 1


def test_sessions_shows_the_20_newest_by_default_and_all_on_request(tmp_path: Path) -> None:
    state = tmp_path / "state"
    paths = StatePaths(state)
    paths.ensure()
    t0 = time.time_ns() - 3_600_000_000_000
    sids = [f"sess-{n:02d}" for n in range(25)]
    for n, sid in enumerate(sids):
        ts = t0 + n * 1_000_000_000
        line = build_line(
            payload(session_id=sid, hook_event_name="UserPromptSubmit", prompt=f"task {n}"), ts, 7
        )
        append_line(str(paths.spool), segment_name(ts), line)
    newest_first = sids[::-1]

    def shown(*flags: str) -> list[str]:
        done = run_cli("sessions", "--json", *flags, "--state-dir", str(state))
        assert done.returncode == 0, done.stderr
        return [row["session_id"] for row in json.loads(done.stdout)]

    assert shown() == newest_first[:20]
    assert shown("--limit", "3") == newest_first[:3]
    assert shown("--all") == newest_first
    table = run_cli("sessions", "--state-dir", str(state)).stdout.splitlines()
    assert len(table) == 1 + 20  # the header and 20 rows
    both = run_cli("sessions", "--all", "--limit", "3", "--state-dir", str(state))
    assert both.returncode == 2 and len(both.stderr.splitlines()) == 1
    zero = run_cli("sessions", "--limit", "0", "--state-dir", str(state))
    assert zero.returncode != 0 and "--limit must be at least 1" in zero.stderr
