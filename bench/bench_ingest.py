"""Ingest throughput with views: events/s from spool into index and views, vs bare decode.

Builds a spool of N events (default 200,000; `--full` for the 1,000,000 of the goal) shaped
like the corpus: the real hook payloads of shared/corpus/hooks when present (else the demo
session), each given a unique tool_use_id and a unique (ts_ns, pid) so nothing is
deduplicated away. The spool is written segment by segment, never held whole in memory.
Then measures, in this process:
  1. bare: msgspec.json.decode of every spool line (untyped), the baseline, measured before and
     after the ingest (interleaved: the machine's load moves both alike);
  2. one daemon pass (IndexWriter.pass_once: decode, redact, normalize, attribute, commit and
     the per-agent views) on a fresh state dir, the figure that counts; the rate of the first
     and of the last W events (W = 100,000, or a quarter of a smaller run) as the index grows;
  3. the time per event of each stage of that same pass (a few timer calls per event:
     `--no-stages` leaves them out), and the CPU time of the writer and of its prepare worker.

The pass prepares lines as the shipped config says (`[ingest] prepare_worker`, off: in the
writer's own process); `--worker` starts the prepare worker process as the daemon then does for
a backlog, `--no-worker` forces it off.

    python bench/bench_ingest.py [--events 200000]
    python bench/bench_ingest.py --full        # 1,000,000 events: ~2.7 GB spool + ~1 GB index
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ctxd_hook.hook import build_line  # noqa: E402
from indexer.config import Config, IngestConfig  # noqa: E402
from indexer.index import store  # noqa: E402
from indexer.ingest.ingestor import Ingestor  # noqa: E402
from indexer.ingest.worker import PrepareWorker  # noqa: E402
from indexer.paths import StatePaths  # noqa: E402
from indexer.prepare import line as prepare  # noqa: E402
from indexer.spool import lines as spool  # noqa: E402
from indexer.spool.lines import repair_surrogates  # noqa: E402
from indexer.writer.catch_up import IndexWriter, open_writer  # noqa: E402
from summarizer.cli.commands.demo_session import demo_session  # noqa: E402

CORPUS = Path(os.environ.get("CTXD_TEST_CORPUS") or REPO.parent / "shared" / "corpus") / "hooks"
PER_SEGMENT = 50_000
WINDOW = 100_000


def sample_payloads() -> tuple[list[dict[str, object]], str]:
    """Well-formed hook payloads from the corpus, else from the demo session."""
    payloads: list[dict[str, object]] = []
    if CORPUS.is_dir():
        for path in sorted(CORPUS.rglob("*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if (
                    isinstance(record, dict)
                    and record.get("session_id")
                    and record.get("hook_event_name")
                ):
                    payloads.append(record)
        if payloads:
            return payloads, f"corpus ({len(payloads)} distinct payloads)"
    return demo_session("/home/dev/project"), "demo session"


def spool_lines(n: int, start: int = 0) -> Iterator[bytes]:
    """n envelope lines numbered from `start`: spools with other starts never overlap."""
    payloads, _ = sample_payloads()
    ts0 = 1_790_000_000_000_000_000
    for i in range(start, start + n):
        p = dict(payloads[i % len(payloads)])
        # Each replay of the corpus is new history: its own sessions, so agent ids of one
        # replay are not taken for agents of another.
        p["session_id"] = f"{p['session_id']}-r{i // len(payloads)}"
        if p.get("tool_use_id") or p.get("tool_name"):
            p["tool_use_id"] = f"toolu_bench_{i:08d}"
        try:
            raw = json.dumps(p, ensure_ascii=False).encode()
        except UnicodeEncodeError:  # lone surrogates (Windows payloads) stay escaped
            raw = repair_surrogates(json.dumps(p).encode())
        yield build_line(raw, ts0 + i * 1000, 10_000 + i % 500)


def build_spool(spool_dir: Path, n: int, start: int = 0) -> int:
    """Write n envelope lines into hour segments of 50,000 lines; return the total bytes."""
    spool_dir.mkdir(parents=True, exist_ok=True)
    total, chunk, segment = 0, [], 0
    for line in spool_lines(n, start):
        chunk.append(line)
        if len(chunk) == PER_SEGMENT:
            total += _write_segment(spool_dir, segment, chunk)
            chunk, segment = [], segment + 1
    if chunk:
        total += _write_segment(spool_dir, segment, chunk)
    return total


def _write_segment(spool_dir: Path, number: int, lines: list[bytes]) -> int:
    data = b"".join(lines)
    (spool_dir / f"2026{number // 24 + 101:04d}T{number % 24:02d}.jsonl").write_bytes(data)
    return len(data)


def bare_decode(spool_dir: Path) -> tuple[float, int]:
    """Seconds to msgspec.json.decode every line of the spool (reading excluded), and lines."""
    decode = msgspec.json.decode
    seconds, n = 0.0, 0
    for segment in sorted(spool_dir.glob("*.jsonl")):
        lines = segment.read_bytes().splitlines()
        t0 = time.perf_counter()
        for line in lines:
            decode(line)
        seconds += time.perf_counter() - t0
        n += len(lines)
    return seconds, n


class Stages:
    """Time spent in each stage of a pass, by wrapping the functions the ingest calls."""

    NAMES = (
        "line guard",
        "decode",
        "normalize",
        "redaction",
        "attribution",
        "insert",
        "worker: send",
        "worker: wait, receive, decode",
    )

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(self.NAMES, 0.0)
        self.views = 0.0

    def timed(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        clock, seconds = time.perf_counter, self.seconds

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                seconds[name] += clock() - t0

        return wrapper

    def install(self, writer: IndexWriter) -> Callable[[], None]:
        """Wrap the stages of `writer`'s pass; return what undoes it."""
        saved = (spool.nesting_error, prepare.decode_envelope, prepare._PAYLOAD)
        saved += (prepare.normalize, prepare.redact_entry, prepare.written_envelope)
        saved += (PrepareWorker.submit, PrepareWorker.result)
        payload = prepare._PAYLOAD

        # The payload decode counts as decode.
        decoder = types.SimpleNamespace(decode=self.timed("decode", payload.decode))

        guard = self.timed("line guard", spool.nesting_error)
        spool.nesting_error = guard
        prepare.decode_envelope = self.timed("decode", saved[1])
        prepare.written_envelope = self.timed("decode", saved[5])  # the guard runs inside
        prepare._PAYLOAD = decoder  # type: ignore[assignment]
        prepare.normalize = self.timed("normalize", saved[3])
        prepare.redact_entry = self.timed("redaction", saved[4])
        PrepareWorker.submit = self.timed("worker: send", saved[6])  # type: ignore[method-assign]
        PrepareWorker.result = self.timed("worker: wait, receive, decode", saved[7])  # type: ignore[method-assign]
        ingestor = writer.ingestor
        ingestor.registry.attribute = self.timed("attribution", ingestor.registry.attribute)
        ingestor._store = self.timed("insert", ingestor._store)  # type: ignore[method-assign]

        def undo() -> None:
            spool.nesting_error, prepare.decode_envelope, prepare._PAYLOAD = saved[:3]
            prepare.normalize, prepare.redact_entry = saved[3:5]
            prepare.written_envelope = saved[5]
            PrepareWorker.submit, PrepareWorker.result = saved[6:8]  # type: ignore[method-assign]

        return undo

    def report(self, total_s: float, views_s: float, n: int) -> list[str]:
        s = dict(self.seconds)
        s["decode"] -= s["line guard"]  # the guard runs inside the envelope decode
        s["views"] = views_s
        s["other (read, split, commit, bookkeeping)"] = total_s - sum(s.values())
        return [f"    {name:<42} {1e6 * sec / n:7.1f} µs/event" for name, sec in s.items()]


def run_pass(
    paths: StatePaths, n: int, stages: Stages | None, worker: bool
) -> tuple[float, list[str]]:
    """One daemon pass with views; return its seconds and the lines to print."""
    writer = open_writer(paths, Config(ingest=IngestConfig(prepare_worker=worker)))
    writer.start()
    undo = stages.install(writer) if stages else (lambda: None)
    progress: list[tuple[float, int]] = []
    views_s = [0.0]
    write_views = writer.ingestor.on_batch
    assert write_views is not None

    def on_batch(batch: Any) -> None:
        t = time.perf_counter()
        entries = progress[-1][1] + batch.entries if progress else batch.entries
        write_views(batch)
        now = time.perf_counter()
        views_s[0] += now - t
        progress.append((now, entries))

    writer.ingestor.on_batch = on_batch
    try:
        cpu0 = os.times()
        t0 = time.perf_counter()
        stats = writer.pass_once()
        total_s = time.perf_counter() - t0
        cpu1 = os.times()  # the worker is reaped at the end of the pass: its CPU is counted
    finally:
        undo()
        writer.close()
    assert stats.entries == n, (stats.entries, stats.quarantined, stats.duplicates)
    window = min(WINDOW, n // 4)
    first = _window_rate([(t0, 0), *progress], 0, window)
    last = _window_rate([(t0, 0), *progress], n - window, n)
    own = cpu1.user + cpu1.system - cpu0.user - cpu0.system
    child = cpu1.children_user + cpu1.children_system - cpu0.children_user - cpu0.children_system
    out = [
        f"    first {window:,} events: {first:,.0f} events/s; last {window:,}: {last:,.0f} events/s"
        f"  ratio {last / first:.2f}  (goal >= 0.9)",
        f"    CPU per event: writer {1e6 * own / n:.1f} µs, prepare worker {1e6 * child / n:.1f} µs,"
        f" both {1e6 * (own + child) / n:.1f} µs; wall {1e6 * total_s / n:.1f} µs"
        f"  ({'with' if worker else 'without'} the prepare worker)",
    ]
    if stages:
        head = "  time per event by stage (this process only"
        head += ": the worker's own stages are not timed):" if worker else "):"
        out += [head, *stages.report(total_s, views_s[0], n)]
    return total_s, out


def _window_rate(progress: list[tuple[float, int]], lo: int, hi: int) -> float:
    """events/s between the batches where `lo` and `hi` entries were reached."""
    t_lo = next(t for t, e in progress if e >= lo)
    t_hi, e_hi = next((t, e) for t, e in progress if e >= hi)
    e_lo = next(e for t, e in progress if e >= lo)
    return (e_hi - e_lo) / (t_hi - t_lo) if t_hi > t_lo else float("inf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--full", action="store_true", help="1,000,000 events (the goal's size)")
    parser.add_argument("--no-stages", action="store_true", help="no per-stage timers")
    parser.add_argument(
        "--search-cost",
        action="store_true",
        help="also ingest without and with the search index, interleaved (its share of ingest)",
    )
    parser.add_argument(
        "--worker",
        action=argparse.BooleanOptionalAction,
        default=IngestConfig().prepare_worker,
        help="prepare lines in a worker process, as [ingest] prepare_worker = true does"
        " (default: the shipped config's choice, off)",
    )
    parser.add_argument(
        "--cache-kib", type=int, default=store.WRITER_CACHE_KIB, help="writer page cache"
    )
    args = parser.parse_args()
    store.WRITER_CACHE_KIB = args.cache_kib
    n = 1_000_000 if args.full else args.events
    source = sample_payloads()[1]
    with tempfile.TemporaryDirectory() as tmp:
        paths = StatePaths(Path(tmp) / "state")
        paths.ensure()
        total_bytes = build_spool(paths.spool, n)
        print(
            f"spool: {n:,} events, {total_bytes / 1e6:.1f} MB, shaped like the {source};"
            f" writer page cache {store.WRITER_CACHE_KIB:,} KiB"
        )
        bare1, lines = bare_decode(paths.spool)
        assert lines == n, lines
        stages = None if args.no_stages else Stages()
        pass_s, out = run_pass(paths, n, stages, worker=args.worker)
        bare2, _ = bare_decode(paths.spool)
        index_mb = paths.index_db.stat().st_size / 1e6
        cost = _search_cost(paths, Path(tmp) / "cost", n) if args.search_cost else None
    bare_s = (bare1 + bare2) / 2
    bare_rate, rate = n / bare_s, n / pass_s
    print(f"bare msgspec.json.decode: {bare_rate:12,.0f} events/s  ({bare1:.2f} s, {bare2:.2f} s)")
    print(
        f"ingest + per-agent views: {rate:12,.0f} events/s  ({pass_s:.2f} s, index"
        f" {index_mb:.0f} MB)  ratio to bare decode {rate / bare_rate:.3f}"
        "  (goal >= 50,000/s and >= 0.2)"
    )
    print("\n".join(out))
    if cost is not None:
        no_search_s, search_s = cost
        print(
            f"search index cost (median of 2 interleaved runs each): ingest {n / search_s:,.0f}"
            f" events/s with it, {n / no_search_s:,.0f} without: {search_s / no_search_s:.2f}x time"
        )


def _search_cost(done: StatePaths, root: Path, n: int, rounds: int = 2) -> tuple[float, float]:
    """Ingest the same spool with and without the search index's trigger, interleaved
    (fresh state each time); return the median seconds (without, with)."""
    spool = root / "spool-kept"
    spool.mkdir(parents=True)
    for segment in done.spool.iterdir():
        segment.rename(spool / segment.name)
    times: dict[bool, list[float]] = {False: [], True: []}
    for r in range(rounds):
        for with_search in (False, True):
            paths = StatePaths(root / f"run{r}{int(with_search)}")
            paths.ensure()
            for segment in spool.iterdir():
                shutil.copyfile(segment, paths.spool / segment.name)
            conn = store.connect(paths.index_db)
            if not with_search:
                conn.execute("UPDATE meta SET value='off' WHERE key='search.version'")  # no search
            ingestor = Ingestor(paths, Config(), conn)
            ingestor.keep_inserted = False
            t0 = time.perf_counter()
            stats = ingestor.run_once()
            times[with_search].append(time.perf_counter() - t0)
            assert stats.entries == n, stats.entries
            conn.close()
            shutil.rmtree(paths.root)
    return statistics.median(times[False]), statistics.median(times[True])


if __name__ == "__main__":
    main()
