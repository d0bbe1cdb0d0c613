"""summarizer.daemon.jobs: scheduled and triggered compaction in the daemon; the end-to-end daemon run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, hook_env, poll, run_cli, run_hook
from memory_helpers import base, emit_payload, prompt, spool

from indexer.config import Config, SummarizerConfig
from indexer.daemon import protocol as daemon_channel
from indexer.index import store
from indexer.ingest.ingestor import IngestStats
from indexer.paths import StatePaths
from indexer.writer.catch_up import open_writer, writer_lock
from summarizer.daemon import jobs
from summarizer.daemon.channel import RequestServer
from summarizer.daemon.service import Daemon
from summarizer.memory import compact as compact_module
from summarizer.memory.hooks import AfterCompaction

AGENT_A, AGENT_B = "a1b2c3d4e5f60718", "a9f8e7d6c5b40312"


class Harness:
    """A Daemon holding the writer lock and serving requests on its socket, whose ingest
    loop the test drives by hand."""

    def __init__(self, root: Path, stack: ExitStack, **summarizer: Any) -> None:
        self.paths = StatePaths(root)
        self.paths.ensure()
        cfg = SummarizerConfig(**{"interval_s": 3600.0, "completions_trigger": 2, **summarizer})
        self.daemon = Daemon(self.paths, Config(summarizer=cfg))
        stack.enter_context(writer_lock(self.paths))
        self.daemon.writer = open_writer(self.paths, self.daemon.config)
        self.daemon.writer.start()
        stack.callback(self.close)
        self.jobs: jobs.CompactionJobs | None = None
        self.conn = store.connect(self.paths.index_db, readonly=True)
        self.listener = daemon_channel.listen(self.paths.root)
        self.server: RequestServer | None = None

    def start(self, *after: AfterCompaction) -> jobs.CompactionJobs:
        """Start the daemon's compaction jobs; `after` is called after each compaction, once
        the daemon's own callbacks (the resume states' refresh) have run."""
        self.jobs = jobs.CompactionJobs(self.daemon)
        self.jobs.after_compaction.extend(after)
        self.jobs.start()
        self.server = RequestServer(self.listener, self.daemon.request_handlers, {"pid": 1})
        self.server.start()
        return self.jobs

    def ingest(self, payloads: list[dict[str, Any]]) -> IngestStats:
        spool(self.paths.root, payloads)
        with self.daemon.index_lock:
            assert self.daemon.writer is not None
            stats = self.daemon.writer.pass_once()
        for listener in self.daemon.listeners:
            listener(stats)
        return stats

    def trigger(self) -> str:
        return store.get_meta(self.conn, "last_compaction_trigger")

    def close(self) -> None:
        self.daemon.stopping.set()
        if self.server is not None:
            self.server.stop()
        daemon_channel.close_listener(self.paths.root, self.listener)
        for callback in self.daemon.stop_callbacks:
            callback()
        assert self.daemon.writer is not None
        self.daemon.writer.conn.close()
        self.conn.close()


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    with ExitStack() as stack:
        yield Harness(tmp_path / "state", stack)


def _stop(agent: str) -> dict[str, Any]:
    return base("SubagentStop", agent_id=agent, agent_type="general-purpose",
                last_assistant_message="Done.")  # fmt: skip


def test_startup_run_then_completion_trigger(harness: Harness) -> None:
    j = harness.start()
    poll(lambda: j.runs == 1 and harness.trigger() == "startup")
    harness.ingest([_stop(AGENT_A), _stop(AGENT_A)])  # one agent counts once
    assert j.runs == 1
    harness.ingest([_stop(AGENT_B)])
    poll(lambda: j.runs == 2 and harness.trigger() == "completions")
    assert store.get_meta(harness.conn, "mem.published") == str(store.max_entry_id(harness.conn))


@pytest.mark.parametrize(
    ("event", "reason"), [("PreCompact", "pre_compact"), ("SessionEnd", "session_end")]
)
def test_pre_compact_and_session_end_trigger_at_once(
    harness: Harness, event: str, reason: str
) -> None:
    j = harness.start()
    poll(lambda: j.runs == 1)
    calls: list[int] = []
    j.after_compaction.append(lambda conn, paths, config: calls.append(store.max_entry_id(conn)))
    harness.ingest([prompt("Never use tabs."), base(event, trigger="auto", reason="exit")])
    poll(lambda: j.runs == 2 and harness.trigger() == reason)
    assert calls and calls[-1] == store.max_entry_id(harness.conn)


def test_requests_during_a_run_cause_exactly_one_more_run(harness: Harness) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow(*_: Any) -> None:
        entered.set()
        release.wait(10)

    try:
        j = harness.start(slow)
        assert entered.wait(10)  # the startup run is inside its callbacks now
        for reason in ("a", "b", "c"):
            j.request(reason)
        j.after_compaction.remove(slow)
        release.set()
        poll(lambda: j.runs == 2 and not j._running)
        assert harness.trigger() == "a,b,c"
        assert j.events["max_instances"] == 0
    finally:
        release.set()


def test_a_failing_run_is_logged_and_the_next_request_runs(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*_: Any, **__: Any) -> None:
        raise RuntimeError("disk on fire")

    original = compact_module.compact_and_publish
    monkeypatch.setattr(compact_module, "compact_and_publish", boom)
    j = harness.start()
    poll(lambda: j.events["error"] == 1)
    assert j.runs == 0 and not j._running
    monkeypatch.setattr(compact_module, "compact_and_publish", original)
    j.request("retry")
    poll(lambda: j.runs == 1 and harness.trigger() == "retry")


def test_a_client_request_over_the_socket_is_served_by_the_daemon(harness: Harness) -> None:
    j = harness.start()
    poll(lambda: j.runs == 1)
    harness.ingest([emit_payload({"kind": "decision", "decision": "Use WAL"})])
    result = compact_module.compact_now(
        harness.paths, harness.daemon.config, trigger="manual", wait_s=10
    )
    assert result.by_daemon and result.new_decisions == 1
    assert result.watermark == store.max_entry_id(harness.conn)
    assert harness.trigger() == "request"
    # Already published: answered without a run.
    again = compact_module.compact_now(harness.paths, harness.daemon.config, trigger="manual")
    assert (again.by_daemon, again.watermark, again.new_decisions) == (True, result.watermark, 0)
    assert j.runs == 2


def test_a_request_left_at_shutdown_is_told_to_compact_by_itself(harness: Harness) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow(*_: Any) -> None:
        entered.set()
        release.wait(10)

    try:
        j = harness.start(slow)
        assert entered.wait(10)  # the startup run is inside its callbacks
        harness.ingest([prompt("Never use tabs.")])  # after the startup run read the index
        sock = daemon_channel.connect(harness.paths.root, 5)
        assert sock is not None
        daemon_channel.send(sock, {"op": "compact", "target": store.max_entry_id(harness.conn)})
        poll(lambda: len(j.waiters))  # the request waits for a run after the startup run
        harness.daemon.stopping.set()  # the daemon stops: that run never comes
        stopped = threading.Thread(target=j.stop)
        stopped.start()
        j.after_compaction.remove(slow)
        release.set()
        reply = daemon_channel.receive(sock, 10)
        sock.close()
        stopped.join(10)
    finally:
        release.set()
    assert reply is not None and reply["ok"] is False and reply["retry"] is True
    assert j.runs == 1


def test_a_daemon_that_never_answers_times_out_with_a_clear_message(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "state")
    spool(paths.root, [prompt("hello")])
    with writer_lock(paths):  # a "daemon" that indexes, listens, and never compacts
        writer = open_writer(paths)
        writer.pass_once()
        writer.conn.close()
        listener = daemon_channel.listen(paths.root)
        try:
            with pytest.raises(
                compact_module.CompactionTimeout, match="did not publish a compaction within"
            ):
                compact_module.compact_now(paths, Config(), trigger="manual", wait_s=0.3)
        finally:
            daemon_channel.close_listener(paths.root, listener)


# --- end to end: `ctxd run` as a real process -------------------------------------------------------


def _hook(state: Path, payload: dict[str, Any]) -> None:
    done = run_hook(json.dumps(payload).encode(), hook_env(state))
    assert done.returncode == 0


def test_daemon_end_to_end(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "config.toml").write_text("[summarizer]\ninterval_s = 1\ncompletions_trigger = 2\n")
    env = hook_env(state, PYTHONPATH=str(REPO))
    log = state / "ctxd.log"
    summary = state / "context" / "running-summary.json"

    def doc() -> dict[str, Any]:
        try:
            return dict(json.loads(summary.read_text()))
        except (OSError, ValueError):
            return {}

    def logged(text: str) -> bool:
        return log.exists() and text in log.read_text()

    errors = tmp_path / "daemon.stderr"
    with errors.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "summarizer.cli.app", "run", "--state-dir", str(state)],
            env=env, stdout=subprocess.DEVNULL, stderr=err,
        )  # fmt: skip
    try:
        poll(lambda: doc().get("trigger") == "startup", timeout=30)
        # A scheduled (interval) compaction picks up a new event.
        _hook(state, prompt("Never touch src/billing_legacy.py."))
        poll(lambda: doc().get("watermark") == 1 and logged("compaction (interval)"), timeout=30)
        assert "billing_legacy" in (state / "context" / "active-constraints.json").read_text()
        # Two agent completions trigger one at once.
        _hook(state, _stop(AGENT_A))
        _hook(state, _stop(AGENT_B))
        poll(lambda: logged("compaction (completions)") and doc().get("watermark") == 3, timeout=30)
        # PreCompact triggers one at once too.
        _hook(state, base("PreCompact", trigger="manual", custom_instructions=""))
        poll(lambda: logged("compaction (pre_compact)") and doc().get("watermark") == 4, timeout=30)
        # `ctxd compact` asks the running daemon instead of writing the index itself (I8).
        _hook(state, emit_payload({"kind": "decision", "decision": "Use WAL"}))
        out = run_cli("compact", "--state-dir", str(state))
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("the daemon compacted; memory at entry 5: +1 decisions")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert rc == 0, errors.read_text()
    assert "compaction job failed" not in log.read_text()
    assert os.stat(summary).st_mode & 0o777 == 0o600
