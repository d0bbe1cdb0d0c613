"""Ingest throughput: events/s from spool into the index, vs bare msgspec.json.decode of the lines.

Builds a spool of N events (default 200,000) shaped like the corpus: the real hook payloads of
shared/corpus/hooks when present (else the demo session), each given a unique tool_use_id and
a unique (ts_ns, pid) so nothing is deduplicated away. Then measures, in this process:
  1. bare: msgspec.json.decode of every spool line (untyped), the baseline;
  2. ingest: Ingestor.run_once into a fresh index (redact, decode, normalize, attribute, commit);
  3. ingest + views: one daemon pass (IndexWriter.pass_once) on a fresh state dir;
  4. the search index's cost: ingest with and without its trigger, interleaved.

    python bench/bench_ingest.py [--events 200000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import msgspec

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from indexer import store  # noqa: E402
from indexer.config import Config  # noqa: E402
from indexer.hook import build_line  # noqa: E402
from indexer.ingest import Ingestor  # noqa: E402
from indexer.paths import StatePaths  # noqa: E402
from indexer.spool import repair_surrogates  # noqa: E402
from indexer.writer import open_writer  # noqa: E402
from summarizer.cli.demo_session import demo_session  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus" / "hooks"


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


def build_spool(spool: Path, n: int, start: int = 0) -> tuple[list[bytes], int]:
    """Write n envelope lines into hour segments; return the lines and total bytes.

    `start` numbers the events from there: spools built with other starts never overlap.
    """
    payloads, _ = sample_payloads()
    lines: list[bytes] = []
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
        lines.append(build_line(raw, ts0 + i * 1000, 10_000 + i % 500))
    spool.mkdir(parents=True, exist_ok=True)
    per_segment = 50_000
    for s in range(0, n, per_segment):
        (spool / f"20260101T{s // per_segment:02d}.jsonl").write_bytes(
            b"".join(lines[s : s + per_segment])
        )
    return lines, sum(len(x) for x in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    args = parser.parse_args()
    source = sample_payloads()[1]
    with tempfile.TemporaryDirectory() as tmp:
        paths = StatePaths(Path(tmp) / "state")
        paths.ensure()
        lines, total_bytes = build_spool(paths.spool, args.events)
        print(f"spool: {args.events} events, {total_bytes / 1e6:.1f} MB, shaped like the {source}")

        decode = msgspec.json.decode
        t0 = time.perf_counter()
        for line in lines:
            decode(line)
        bare_s = time.perf_counter() - t0
        del lines

        conn = store.connect(paths.index_db)
        ingestor = Ingestor(paths, Config(), conn)
        ingestor.keep_inserted = False
        t0 = time.perf_counter()
        stats = ingestor.run_once()
        ingest_s = time.perf_counter() - t0
        assert stats.entries == args.events, (stats.entries, stats.quarantined, stats.duplicates)
        conn.close()

        # What the daemon does: the same ingest plus the per-agent views, on a fresh state dir.
        paths2 = StatePaths(Path(tmp) / "state2")
        paths2.ensure()
        for segment in paths.spool.iterdir():
            segment.rename(paths2.spool / segment.name)
        writer = open_writer(paths2, Config())
        t0 = time.perf_counter()
        writer.start()
        stats = writer.pass_once()
        views_s = time.perf_counter() - t0 - ingest_s
        writer.conn.close()
        no_search_s, search_s = _search_cost(paths2, Path(tmp) / "cost", args.events)

    n = args.events
    bare_rate, ingest_rate = n / bare_s, n / ingest_s
    full_rate = n / (ingest_s + views_s)
    print(f"bare msgspec.json.decode: {bare_rate:12,.0f} events/s  ({bare_s:.2f} s)")
    print(
        f"ingest into the index:    {ingest_rate:12,.0f} events/s  ({ingest_s:.2f} s)"
        f"  ratio to bare decode {ingest_rate / bare_rate:.3f}  (goal >= 50,000/s and >= 0.15)"
    )
    print(
        f"ingest + per-agent views: {full_rate:12,.0f} events/s  ({ingest_s + views_s:.2f} s)"
        f"  ratio to bare decode {full_rate / bare_rate:.3f}"
    )
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
                conn.execute("DROP TRIGGER search_entry_ai")
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
