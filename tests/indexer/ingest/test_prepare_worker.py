"""The prepare worker: the same index with and without it, and a worker that dies, hangs or
answers garbage costs nothing but its help (every event indexed exactly once, no child left)."""

from __future__ import annotations

import logging
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import HOOKS, spooled_corpus
from helpers import REPO, clean_env, poll, query
from worker_helpers import GARBAGE_WORKER, no_child_left, signal_at

from ctxd_hook.hook import build_line
from indexer.config import Config, IngestConfig
from indexer.ingest import worker as prepare_worker
from indexer.ingest.ingestor import Ingestor
from indexer.ingest.worker import PrepareWorker
from indexer.paths import StatePaths
from indexer.writer.catch_up import catch_up, open_writer, writer_lock

pytestmark = pytest.mark.skipif(not HOOKS.is_dir(), reason="needs the hook corpus")

SEALED = "20260101T00.jsonl"  # the segment spooled_corpus writes
# Small batches: the corpus then makes hundreds of them, enough to start the worker (its
# threshold is a number of batches) and to keep it busy for most of the pass.
BATCH_BYTES = 32 * 1024
T_POISON = 1_800_000_000_000_000_000
_GOOD = b'{"session_id":"s-poison","hook_event_name":"UserPromptSubmit","prompt":"p%d"}'

# Lines that each take another path of the preparation: quarantined for what they are, kept
# blank, repaired, or stored.
POISON = [
    b"not json at all",
    b'{"ctxd":1,"ts_ns":1,"pid":2,"event":{"session_id":"s-poison","hook',  # torn
    b"   ",
    build_line(b'{"session_id":"../../etc","hook_event_name":"Stop"}', T_POISON + 1, 7)[:-1],
    build_line(
        b'{"session_id":"s-poison","hook_event_name":"Stop","x":' + b"[" * 300 + b"]" * 300 + b"}",
        T_POISON + 2,
        7,
    )[:-1],
    build_line(
        b'{"session_id":"s-poison","hook_event_name":"PostToolUse","tool_name":"Bash",'
        b'"tool_use_id":"t1","tool_input":{"command":"\xff\xfe"}}',
        T_POISON + 3,
        7,
    )[:-1],
    build_line(
        b'{"session_id":"s-poison","hook_event_name":"UserPromptSubmit","prompt":"half \\ud83d"}',
        T_POISON + 4,
        7,
    )[:-1],
    b'{"ctxd":2,"ts_ns":5,"pid":6,"event":{}}',
    b'{"ctxd":1,"ts_ns":18446744073709551616,"pid":6,"event":{}}',
]


def _spool(root: Path) -> StatePaths:
    """The whole corpus with poison lines spread through it, every few hundred lines."""
    paths = spooled_corpus(root)
    segment = paths.spool / SEALED
    lines = segment.read_bytes().split(b"\n")[:-1]
    out: list[bytes] = []
    for i, line in enumerate(lines):
        out.append(line)
        if i % 300 == 150:
            k = i // 300
            out.append(POISON[k % len(POISON)])
            out.append(build_line(_GOOD % k, T_POISON + 100 + k, 8)[:-1])
    segment.write_bytes(b"\n".join(out) + b"\n")
    return paths


def _config(*, worker: bool) -> Config:
    return Config(ingest=IngestConfig(batch_bytes=BATCH_BYTES, prepare_worker=worker))


def _index(paths: StatePaths) -> dict[str, Any]:
    """Everything ingest wrote that does not depend on the clock: rows and view files."""
    tables = {
        "entries": "SELECT * FROM entries ORDER BY id",
        "quarantine": "SELECT id, file_id, name, offset, line_no, error, raw FROM quarantine"
        " ORDER BY id",
        "sessions": "SELECT * FROM sessions ORDER BY session_id",
        "agents": "SELECT * FROM agents ORDER BY session_id, agent_id",
        "aliases": "SELECT * FROM agent_aliases ORDER BY 1, 2, 3",
        "files": "SELECT name, offset, line_no FROM files ORDER BY name",
    }
    found: dict[str, Any] = {k: query(paths.root, sql) for k, sql in tables.items()}
    found["views"] = {
        str(p.relative_to(paths.sessions)): p.read_bytes()
        for p in sorted(paths.sessions.rglob("*.jsonl"))
    }
    return found


def _count_results(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the batches the worker's results were used for; return the live count."""
    used: list[int] = []
    real = PrepareWorker.result

    def result(self: PrepareWorker, *args: Any) -> Any:
        out = real(self, *args)
        used.append(self.pid)
        return out

    monkeypatch.setattr(PrepareWorker, "result", result)
    return used


def test_the_index_is_the_same_with_and_without_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    used = _count_results(monkeypatch)
    stored: list[int] = []
    real_store = Ingestor._store

    def store(self: Ingestor, batch: Any) -> None:
        stored.append(len(batch.pending))
        real_store(self, batch)

    monkeypatch.setattr(Ingestor, "_store", store)
    alone = _spool(tmp_path / "alone")
    helped = _spool(tmp_path / "helped")
    first = catch_up(alone, _config(worker=False)).stats
    assert used == []
    second = catch_up(helped, _config(worker=True)).stats
    no_child_left("the pass")
    batches = len(stored) // 2  # the second pass's
    assert len(used) > batches // 2, (len(used), batches)  # the worker did most of it
    assert len(set(used)) == 1  # one worker for the pass
    assert (second.lines, second.entries, second.quarantined) == (
        first.lines,
        first.entries,
        first.quarantined,
    )
    assert first.quarantined >= len(POISON) - 1  # the blank line is skipped, not quarantined
    a, b = _index(alone), _index(helped)
    for key in a:
        assert a[key] == b[key], key


def _exactly_once(paths: StatePaths, reference: dict[str, Any]) -> None:
    got = _index(paths)
    assert got["entries"] == reference["entries"]
    assert got["quarantine"] == reference["quarantine"]
    assert got["views"] == reference["views"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    paths = _spool(tmp_path_factory.mktemp("reference"))
    catch_up(paths, _config(worker=False))
    return _index(paths)


def test_a_worker_killed_mid_pass_loses_and_repeats_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    reference: dict[str, Any],
) -> None:
    pids = signal_at(monkeypatch, "result", 5, signal.SIGKILL)
    paths = _spool(tmp_path / "state")
    with caplog.at_level(logging.WARNING, logger="ctxd.ingest"):
        catch_up(paths, _config(worker=True))
    # Killed after it had written its fifth reply, it fails on the sixth batch.
    assert len(pids) in (5, 6)  # and is not used after that
    no_child_left("the pass")
    warnings = [r.getMessage() for r in caplog.records if "prepare worker" in r.getMessage()]
    assert warnings == [
        f"the prepare worker (pid {pids[0]}) exited (signal 9); this pass prepares the rest"
        " in this process"
    ]
    _exactly_once(paths, reference)


def test_a_hung_worker_is_given_up_after_the_bound(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    reference: dict[str, Any],
) -> None:
    monkeypatch.setattr(prepare_worker, "RESULT_TIMEOUT_S", 0.5)
    pids = signal_at(monkeypatch, "result", 3, signal.SIGSTOP)
    paths = _spool(tmp_path / "state")
    with caplog.at_level(logging.WARNING, logger="ctxd.ingest"):
        catch_up(paths, _config(worker=True))
    # Stopped after it had written its third reply, it hangs on the fourth batch.
    assert len(pids) in (3, 4)
    no_child_left("the pass")  # killed and reaped, stopped as it was
    assert any("gave no result within 0.5 s" in r.getMessage() for r in caplog.records)
    _exactly_once(paths, reference)


def test_a_worker_answering_garbage_is_given_up(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    reference: dict[str, Any],
) -> None:
    monkeypatch.setattr(prepare_worker, "_CHILD", GARBAGE_WORKER)
    paths = _spool(tmp_path / "state")
    with caplog.at_level(logging.WARNING, logger="ctxd.ingest"):
        catch_up(paths, _config(worker=True))
    no_child_left("the pass")
    warnings = [r.getMessage() for r in caplog.records if "prepare worker" in r.getMessage()]
    assert len(warnings) == 1 and "sent a result that does not decode" in warnings[0]
    _exactly_once(paths, reference)


@pytest.mark.parametrize(
    ("enabled", "batch_bytes", "expected"),
    [
        (True, BATCH_BYTES, True),
        (False, BATCH_BYTES, False),
        (None, BATCH_BYTES, False),
        (True, 1 << 30, False),
    ],
    ids=["backlog", "switched-off", "off-by-default", "small-backlog"],
)
def test_the_worker_starts_only_when_enabled_and_worth_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    enabled: bool | None,
    batch_bytes: int,
    expected: bool,
) -> None:
    started: list[int] = []
    real: Callable[..., None] = PrepareWorker.__init__

    def init(self: PrepareWorker, cfg: IngestConfig) -> None:
        real(self, cfg)
        started.append(self.pid)

    monkeypatch.setattr(PrepareWorker, "__init__", init)
    paths = _spool(tmp_path / "state")
    switch = {} if enabled is None else {"prepare_worker": enabled}
    config = Config(ingest=IngestConfig(batch_bytes=batch_bytes, **switch))
    catch_up(paths, config)
    assert bool(started) is expected
    no_child_left("the pass")


def _children(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()


def test_the_daemon_has_no_child_once_the_backlog_is_in(tmp_path: Path) -> None:
    paths = _spool(tmp_path / "state")
    paths.config.write_text(f"[ingest]\nbatch_bytes = {BATCH_BYTES}\nprepare_worker = true\n")
    expected = len(_index_reference_lines(paths))
    env = clean_env(PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, "-m", "summarizer.cli.app", "run", "--state-dir", str(paths.root)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        poll(lambda: _entries(paths) == expected, timeout=120)
        # The worker ends with the catch-up pass; the daemon then idles alone.
        poll(lambda: _children(proc.pid) == [], timeout=30)
        log = (paths.root / "ctxd.log").read_text()
        assert "prepare worker started" in log
        assert "the prepare worker (pid" not in log  # it never failed
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _index_reference_lines(paths: StatePaths) -> list[bytes]:
    """The lines that give an entry: the ones a worker-less catch-up of a copy stores."""
    copy = StatePaths(paths.root.parent / "copy")
    copy.ensure()
    (copy.spool / SEALED).write_bytes((paths.spool / SEALED).read_bytes())
    catch_up(copy, _config(worker=False))
    return [r[0] for r in query(copy.root, "SELECT text FROM entries")]


def _entries(paths: StatePaths) -> int:
    try:
        return int(query(paths.root, "SELECT count(*) FROM entries")[0][0])
    except sqlite3.Error:
        return -1


def test_a_pass_told_to_stop_ends_its_worker_and_the_next_pass_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: dict[str, Any]
) -> None:
    used = _count_results(monkeypatch)
    paths = _spool(tmp_path / "state")
    batches: list[int] = []
    with writer_lock(paths):
        writer = open_writer(paths, _config(worker=True))
        try:
            writer.start()
            write_views = writer.ingestor.on_batch
            assert write_views is not None

            def on_batch(stats: Any) -> None:
                batches.append(stats.lines)
                write_views(stats)

            writer.ingestor.on_batch = on_batch
            # Asked between batches: stop once the worker has prepared a few of them.
            writer.ingestor.should_stop = lambda: len(used) >= 3
            first = writer.pass_once()
            no_child_left("the pass")
            assert len(used) == 3 and first.lines == sum(batches)
            writer.ingestor.should_stop = None
            while writer.pass_once().lines:
                pass
        finally:
            writer.close()
    no_child_left("the pass")
    assert len(set(used)) == 2  # a worker for each pass
    _exactly_once(paths, reference)
