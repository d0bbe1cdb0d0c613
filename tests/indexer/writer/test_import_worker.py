"""`ctxd import` with the prepare worker: the same index as without it, bad records quarantined
with file and line, and a worker that dies or answers garbage costs nothing but its help."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from helpers import CORPUS, REPO, clean_env, poll, query
from worker_helpers import GARBAGE_WORKER, no_child_left, signal_at

from indexer.config import Config, IngestConfig
from indexer.ingest import worker as prepare_worker
from indexer.ingest.worker import PrepareWorker
from indexer.paths import StatePaths
from indexer.writer import import_ahead as transcript_ahead
from indexer.writer.catch_up import open_writer, writer_lock
from indexer.writer.import_ahead import import_files
from indexer.writer.importer import ImportStats, TranscriptImporter

TRANSCRIPTS = CORPUS / "transcripts"
pytestmark = pytest.mark.skipif(not TRANSCRIPTS.is_dir(), reason=f"no corpus at {CORPUS}")

# Small batches: the corpus then makes hundreds of them, enough to start the worker (its
# threshold is a number of batches) and to keep it busy for most of the import.
BATCH_BYTES = 64 * 1024
BAD = [
    b"{not json\n",
    b'["a list"]\n',
    b'{"type":"user","timestamp":"yesterday","sessionId":"s","message":{"content":"hi"}}\n',
]


def _copy_corpus(dest: Path) -> list[Path]:
    """The corpus transcripts, finished an hour ago, with bad records in every third file."""
    stamp = datetime.now().timestamp() - 3600
    copies = []
    for i, path in enumerate(sorted(TRANSCRIPTS.rglob("*.jsonl"))):
        copy = dest / path.relative_to(TRANSCRIPTS)
        copy.parent.mkdir(parents=True, exist_ok=True)
        lines = path.read_bytes().splitlines(keepends=True)
        if i % 3 == 0:
            middle = len(lines) // 2
            lines[middle:middle] = BAD
        copy.write_bytes(b"".join(lines))
        os.utime(copy, (stamp, stamp))
        copies.append(copy)
    return copies


def _import(root: Path, files: list[Path], worker: str) -> ImportStats:
    paths = StatePaths(root)
    with writer_lock(paths):
        writer = open_writer(paths, Config(ingest=IngestConfig(batch_bytes=BATCH_BYTES)))
        try:
            writer.start()
            return import_files(TranscriptImporter(writer), files, worker=worker)
        finally:
            writer.close()


def _index(root: Path) -> dict[str, Any]:
    """Everything the import wrote that does not depend on the clock: rows, search documents,
    read positions and view files."""
    tables = {
        "entries": "SELECT * FROM entries ORDER BY id",
        "search": "SELECT rowid, * FROM search ORDER BY rowid",
        "quarantine": "SELECT id, file_id, name, offset, line_no, error, raw FROM quarantine"
        " ORDER BY id",
        "sessions": "SELECT * FROM sessions ORDER BY session_id",
        "agents": "SELECT * FROM agents ORDER BY session_id, agent_id",
        "aliases": "SELECT * FROM agent_aliases ORDER BY 1, 2, 3",
        "offsets": "SELECT file_id, path, head_len, head_hash, offset, marker, line_no"
        " FROM transcript_files ORDER BY file_id",
    }
    found: dict[str, Any] = {k: query(root, sql) for k, sql in tables.items()}
    sessions = StatePaths(root).sessions
    found["views"] = {
        str(p.relative_to(sessions)): p.read_bytes() for p in sorted(sessions.rglob("*.jsonl"))
    }
    return found


def _count_results(
    monkeypatch: pytest.MonkeyPatch, kill_at: int = 0, sig: signal.Signals = signal.SIGKILL
) -> list[int]:
    """Count the batches whose result the writer waited for (sending `sig` to the worker
    just before the `kill_at`-th); return the live list of worker pids."""
    ready = PrepareWorker.poll_ready
    # Files start in process until the worker is ready: here the first waits for it, so the
    # worker takes every batch whatever the machine's load.
    monkeypatch.setattr(
        PrepareWorker, "poll_ready", lambda self: poll(lambda: ready(self), timeout=60)
    )
    return signal_at(monkeypatch, "converted", kill_at, sig)


_REFERENCE_ROOT: list[Path] = []


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], ImportStats]:
    root = tmp_path_factory.mktemp("alone")
    _REFERENCE_ROOT[:] = [root]
    stats = _import(root / ".ctxd", _copy_corpus(root / "transcripts"), "off")
    return _index(root / ".ctxd"), stats


def test_the_index_is_the_same_with_and_without_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: tuple[dict[str, Any], ImportStats]
) -> None:
    used = _count_results(monkeypatch)
    in_process: list[int] = []
    real_prepare = TranscriptImporter.prepare

    def prepare(self: TranscriptImporter, run: Any, step: Any) -> Any:
        in_process.append(step.pos)
        return real_prepare(self, run, step)

    monkeypatch.setattr(TranscriptImporter, "prepare", prepare)
    files = _copy_corpus(tmp_path / "transcripts")
    stats = _import(tmp_path / ".ctxd", files, "on")
    no_child_left("the import")
    expected, alone = reference
    assert len(used) > 100 and in_process == []  # the worker prepared every batch
    assert len(set(used)) == 1
    assert stats == alone
    got = _index(tmp_path / ".ctxd")
    # The same files, in another folder: the same rows but for the paths.
    for key in got:
        assert got[key] == _moved(expected[key], tmp_path), key


def _moved(value: Any, root: Path) -> Any:
    """`value` with the reference's transcript folder replaced by the one under `root`."""
    if isinstance(value, dict):
        return {k: _moved(v, root) for k, v in value.items()}
    if isinstance(value, list):
        return [_moved(v, root) for v in value]
    if isinstance(value, tuple):
        return tuple(_moved(v, root) for v in value)
    old = str(_REFERENCE_ROOT[0])
    if isinstance(value, str):
        return value.replace(old, str(root))
    if isinstance(value, bytes):
        return value.replace(old.encode(), str(root).encode())
    return value


def test_bad_records_are_quarantined_with_file_and_line_through_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    used = _count_results(monkeypatch)
    files = _copy_corpus(tmp_path / "transcripts")
    stats = _import(tmp_path / ".ctxd", files, "on")
    assert used
    bad_files = files[::3]
    assert stats.quarantined == len(BAD) * len(bad_files)
    rows = query(tmp_path / ".ctxd", "SELECT name, line_no, error FROM quarantine ORDER BY id")
    for path in bad_files:
        mine = [(r[1], r[2]) for r in rows if r[0] == str(path)]
        # The bad lines went in after the first half of the original lines.
        at = (len(path.read_bytes().splitlines()) - len(BAD)) // 2
        assert [n for n, _ in mine] == [at + 1, at + 2, at + 3], (path, mine)
        assert "not a transcript record" in mine[0][1] and "timestamp" in mine[2][1]


def test_a_worker_killed_mid_import_loses_and_repeats_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    reference: tuple[dict[str, Any], ImportStats],
) -> None:
    used = _count_results(monkeypatch, kill_at=40)
    files = _copy_corpus(tmp_path / "transcripts")
    with caplog.at_level(logging.WARNING, logger="ctxd.import"):
        stats = _import(tmp_path / ".ctxd", files, "on")
    no_child_left("the import")
    # Killed when it may have written the replies to the two batches ahead, it fails on the
    # 40th to 42nd batch.
    assert len(used) in (40, 41, 42)  # and is not used after that
    warnings = [r.getMessage() for r in caplog.records if "prepare worker" in r.getMessage()]
    assert warnings == [
        f"the prepare worker (pid {used[0]}) exited (signal 9); the import reads the rest in"
        " this process"
    ]
    expected, alone = reference
    got = _index(tmp_path / ".ctxd")
    for key in got:
        assert got[key] == _moved(expected[key], tmp_path), key
    assert (stats.entries, stats.quarantined, stats.files) == (
        alone.entries,
        alone.quarantined,
        alone.files,
    )


def test_a_hung_worker_is_given_up_after_the_bound(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    reference: tuple[dict[str, Any], ImportStats],
) -> None:
    monkeypatch.setattr(prepare_worker, "RESULT_TIMEOUT_S", 0.5)
    used = _count_results(monkeypatch, kill_at=20, sig=signal.SIGSTOP)
    files = _copy_corpus(tmp_path / "transcripts")
    with caplog.at_level(logging.WARNING, logger="ctxd.import"):
        _import(tmp_path / ".ctxd", files, "on")
    no_child_left("the import")  # killed and reaped, stopped as it was
    assert len(used) in (20, 21, 22)
    assert any("gave no result within 0.5 s" in r.getMessage() for r in caplog.records)
    got = _index(tmp_path / ".ctxd")
    for key in got:
        assert got[key] == _moved(reference[0][key], tmp_path), key


def test_a_worker_answering_garbage_is_given_up(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    reference: tuple[dict[str, Any], ImportStats],
) -> None:
    monkeypatch.setattr(prepare_worker, "_CHILD", GARBAGE_WORKER)
    files = _copy_corpus(tmp_path / "transcripts")
    with caplog.at_level(logging.WARNING, logger="ctxd.import"):
        _import(tmp_path / ".ctxd", files, "on")
    no_child_left("the import")
    warnings = [r.getMessage() for r in caplog.records if "prepare worker" in r.getMessage()]
    assert len(warnings) == 1 and "sent a result that does not decode" in warnings[0]
    got = _index(tmp_path / ".ctxd")
    for key in got:
        assert got[key] == _moved(reference[0][key], tmp_path), key


# Runs `ctxd ARGS` as a child subreaper: once it exited, its orphans are our children.
_SUBREAPER = r"""
import ctypes, json, os, subprocess, sys
if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
    raise SystemExit("prctl(PR_SET_CHILD_SUBREAPER) failed")
done = subprocess.run([sys.executable, "-m", "summarizer.cli.app", *sys.argv[1:]],
                      capture_output=True, text=True, timeout=300)
orphans = 0
while True:
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        break
    if pid == 0:
        orphans += 1  # alive
        break
    orphans += 1  # ended after its parent
print(json.dumps([done.returncode, done.stdout, done.stderr, orphans]))
"""


def test_ctxd_import_with_the_worker_leaves_no_process(
    tmp_path: Path, reference: tuple[dict[str, Any], ImportStats]
) -> None:
    files = _copy_corpus(tmp_path / "transcripts")
    state = tmp_path / ".ctxd"
    StatePaths(state).ensure()
    (state / "config.toml").write_text(f"[ingest]\nbatch_bytes = {BATCH_BYTES}\n")
    out = subprocess.run(
        [sys.executable, "-c", _SUBREAPER, "import", "--prepare-worker", "on", *map(str, files)],
        env=clean_env(PYTHONPATH=str(REPO), CTXD_HOME=str(state)),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    code, stdout, stderr, orphans = json.loads(out.stdout)
    assert code == 0, stderr
    assert orphans == 0
    alone = reference[1]
    assert f"imported {alone.entries} entries from {alone.lines} lines" in stdout


def _started_workers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The live list of the pids of every prepare worker started from now on."""
    started: list[int] = []
    real = PrepareWorker.__init__

    def init(self: PrepareWorker, cfg: IngestConfig) -> None:
        real(self, cfg)
        started.append(self.pid)

    monkeypatch.setattr(PrepareWorker, "__init__", init)
    return started


@pytest.mark.parametrize(
    ("worker", "batch_bytes", "expected"),
    [("on", BATCH_BYTES, True), ("off", BATCH_BYTES, False), ("on", 1 << 30, False)],
    ids=["on", "off", "small-import"],
)
def test_the_worker_starts_only_when_asked_and_worth_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, worker: str, batch_bytes: int, expected: bool
) -> None:
    started = _started_workers(monkeypatch)
    paths = StatePaths(tmp_path / ".ctxd")
    files = _copy_corpus(tmp_path / "transcripts")
    with writer_lock(paths):
        writer = open_writer(paths, Config(ingest=IngestConfig(batch_bytes=batch_bytes)))
        try:
            writer.start()
            import_files(TranscriptImporter(writer), files, worker=worker)
        finally:
            writer.close()
    assert bool(started) is expected
    no_child_left("the import")


def _samples(idle_ticks: int, total_ticks: int) -> Callable[[], list[int]]:
    """A stand-in for /proc/stat's cpu line: two samples `total_ticks` apart, `idle_ticks`
    of them idle (user, nice, system, idle, iowait, irq, softirq, steal)."""
    readings = iter(
        [
            [1000, 0, 500, 8000, 100, 0, 0, 0],
            [1000 + total_ticks - idle_ticks, 0, 500, 8000 + idle_ticks, 100, 0, 0, 0],
        ]
    )
    return lambda: next(readings)


@pytest.mark.parametrize(
    ("cores", "idle_ticks", "expected"),
    [(2, 200, True), (2, 185, True), (2, 100, False), (2, 150, False), (1, 100, False)],
    ids=["both-idle", "nearly-both-idle", "one-busy", "one-half-busy", "one-core"],
)
def test_auto_starts_the_worker_only_with_a_core_idle_besides_the_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cores: int, idle_ticks: int, expected: bool
) -> None:
    started = _started_workers(monkeypatch)
    monkeypatch.setattr(transcript_ahead, "_SAMPLE_S", 0.0)
    monkeypatch.setattr(transcript_ahead.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(transcript_ahead, "_cpu_times", _samples(idle_ticks, 100 * cores))
    files = _copy_corpus(tmp_path / "transcripts")
    _import(tmp_path / ".ctxd", files, "auto")
    assert bool(started) is expected
    no_child_left("the import")


def test_auto_falls_back_to_the_load_average_without_proc_stat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unreadable() -> list[int]:
        raise OSError("no /proc/stat")

    monkeypatch.setattr(transcript_ahead, "_SAMPLE_S", 0.0)
    monkeypatch.setattr(transcript_ahead, "_cpu_times", unreadable)
    monkeypatch.setattr(transcript_ahead.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(transcript_ahead.os, "getloadavg", lambda: (1.5, 1.0, 1.0))
    assert transcript_ahead.core_is_idle()
    monkeypatch.setattr(transcript_ahead.os, "getloadavg", lambda: (3.5, 1.0, 1.0))
    assert not transcript_ahead.core_is_idle()
