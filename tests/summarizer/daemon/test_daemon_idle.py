"""An idle daemon sleeps: counted ingest passes, never a busy loop (no timed assertion).

The daemon's own reads of the spool (opened / closed_no_write notifications) once woke it for
the next pass, which read the spool again: a loop that used a whole core with nothing to do.
The daemon counts its passes and its skipped rescans in daemon.json; over an idle window the
count must stay within what the rescan interval allows.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from helpers import REPO, clean_env, hook_env, payload, poll, query, run_hook

from indexer.paths import StatePaths
from summarizer.daemon.service import ACTIVE_WINDOW_S

RESCAN_S = 0.5
IDLE_WINDOW_S = 5.0
CONFIG = f"""
[daemon]
rescan_interval_s = {RESCAN_S}
heartbeat_interval_s = 0.2
"""


def _heartbeat(paths: StatePaths, proc: subprocess.Popen[bytes]) -> dict[str, Any] | None:
    assert proc.poll() is None, "the daemon exited"
    try:
        return dict(json.loads(paths.daemon_json.read_bytes()))
    except (FileNotFoundError, ValueError):
        return None


def _indexed(state: Path, tool_use_id: str) -> bool:
    try:
        return bool(query(state, "SELECT 1 FROM entries WHERE tool_use_id=?", (tool_use_id,)))
    except Exception:  # the index does not exist yet
        return False


@contextmanager
def _settled_daemon(
    tmp_path: Path, tool_use_id: str, config: str | None = None
) -> Iterator[tuple[StatePaths, subprocess.Popen[bytes]]]:
    """A real `ctxd run` on a state dir with one spooled event (`config`, else the shipped
    one), once it has indexed the event and published its startup compaction; stopped after."""
    state = tmp_path / "state"
    paths = StatePaths(state)
    paths.ensure()
    if config is not None:
        paths.config.write_text(config)
    done = run_hook(payload(tool_name="Bash", tool_use_id=tool_use_id), hook_env(state))
    assert done.returncode == 0
    with (tmp_path / "daemon.stderr").open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "summarizer.cli.app", "run", "--state-dir", str(state)],
            env=clean_env(PYTHONPATH=str(REPO)),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        poll(lambda: _indexed(state, tool_use_id), timeout=30)
        poll((paths.context / "running-summary.json").exists, timeout=60)
        yield paths, proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_an_idle_daemon_runs_no_more_passes_than_the_rescan_interval_allows(
    tmp_path: Path,
) -> None:
    # One spooled event, as in the report that found the busy loop.
    with _settled_daemon(tmp_path, "toolu_idle1", CONFIG) as (paths, proc):
        # After new lines the daemon polls briefly at a short interval (more usually follow);
        # the idle window starts once that moment is over.
        def quiet_beat() -> dict[str, Any] | None:
            beat = _heartbeat(paths, proc)
            if not beat or not beat["last_lines_at"]:  # written before the event was indexed
                return None
            if beat["heartbeat"] - beat["last_lines_at"] > 2 * ACTIVE_WINDOW_S:
                return beat
            return None

        first = poll(quiet_beat, timeout=60, interval=0.1)

        def after_window() -> dict[str, Any] | None:
            beat = _heartbeat(paths, proc)
            if beat and beat["heartbeat"] - first["heartbeat"] >= IDLE_WINDOW_S:
                return beat
            return None

        last = poll(after_window, timeout=120, interval=0.1)
    window_s = last["heartbeat"] - first["heartbeat"]  # the daemon's own clock
    allowed = int(window_s / RESCAN_S) + 2
    passes = last["passes"] - first["passes"]
    checks = passes + last["skipped"] - first["skipped"]
    assert passes <= allowed, (passes, window_s, last)
    assert checks <= allowed, (checks, window_s, last)
    assert last["lag_lines"] == 0


def test_interval_compactions_skip_when_nothing_is_new_and_an_idle_daemon_drops_the_tokenizer(
    tmp_path: Path,
) -> None:
    from indexer.config import Config
    from indexer.writer.catch_up import open_writer, writer_lock
    from summarizer.common import tokens
    from summarizer.daemon.jobs import CompactionJobs
    from summarizer.daemon.service import Daemon

    state = tmp_path / "state"
    paths = StatePaths(state)
    paths.ensure()
    run_hook(payload(tool_name="Bash", tool_use_id="toolu_job1"), hook_env(state))
    daemon = Daemon(paths, Config())
    with writer_lock(paths):
        daemon.writer = open_writer(paths, daemon.config)
        jobs = CompactionJobs(daemon)
        try:
            daemon.writer.pass_once()
            jobs.request("pre_compact")  # no scheduler: only records the reason
            jobs._job()
            assert (jobs.runs, jobs.skipped) == (1, 0)
            jobs._release_tokenizer_when_idle()
            assert tokens._COUNTERS  # kept while compactions may follow
            jobs.tokenizer_idle_s = 0.0  # as if the daemon had been idle long enough
            jobs._release_tokenizer_when_idle()
            assert tokens._COUNTERS == {}
            jobs._job()  # an interval run with nothing new: the tokenizer is not loaded again
            assert (jobs.runs, jobs.skipped) == (1, 1)
            assert tokens._COUNTERS == {}
            run_hook(payload(tool_name="Bash", tool_use_id="toolu_job2"), hook_env(state))
            assert daemon.writer.pass_once().entries == 1
            jobs._job()
            assert (jobs.runs, jobs.skipped) == (2, 1)
        finally:
            jobs.stop()
            daemon.writer.close()


def _blocked(pid: int) -> int:
    """Times the daemon's threads have blocked so far (voluntary context switches): each wake-up
    from a timer, a notification or a request is one more."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    total += int(line.split()[1])
        except OSError:
            continue  # a thread that ended meanwhile
    return total


WAKES_PER_HEARTBEAT = 20  # generous: one wake-up writes daemon.json (fsyncs block too)


def test_an_idle_daemon_wakes_about_once_per_heartbeat_not_ten_times_a_second(
    tmp_path: Path,
) -> None:
    # Nothing polls at rest: the loop sleeps until a notification, a request on its socket or
    # the rescan, which backs off to the heartbeat's interval and shares its wake-up; the other
    # threads block until something happens. It once polled for a request file ten times a
    # second and woke watchdog's threads with its own rescans.
    # The shipped config: heartbeat and idle rescan every 5 s.
    with _settled_daemon(tmp_path, "toolu_rest1") as (paths, proc):

        def at_rest() -> dict[str, Any] | None:
            # The rescan has backed off (1 + 2 + 4 + 5 s after the last lines).
            beat = _heartbeat(paths, proc)
            if beat and beat["last_lines_at"] and beat["heartbeat"] - beat["last_lines_at"] > 13:
                return beat
            return None

        first = poll(at_rest, timeout=120, interval=0.01)
        blocked_first = _blocked(proc.pid)

        def beats_later(n: int) -> dict[str, Any] | None:
            beat = _heartbeat(paths, proc)
            return beat if beat and beat["heartbeat"] > first["heartbeat"] + 5 * n - 2 else None

        last = poll(lambda: beats_later(2), timeout=60, interval=0.01)
        blocked = _blocked(proc.pid) - blocked_first
    assert last["passes"] == first["passes"]  # nothing to index: stat calls only
    assert blocked <= 2 * WAKES_PER_HEARTBEAT, (blocked, first, last)
