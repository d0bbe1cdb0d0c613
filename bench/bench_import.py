"""Transcript import speed vs bare msgspec.json.decode of the same files, and a re-run's cost.

Generates transcripts shaped like shared/corpus/transcripts: each corpus transcript copied
over and over, every copy with its own session, record and tool ids (so nothing is
deduplicated away), one file per copy, until --mb megabytes, dated a day back (finished sessions). Then, in this process:
  1. bare: msgspec.json.decode of every line of every file (untyped), the baseline;
  2. convert: the import's own part alone: read, split and turn every line into the hook
     events it gives (transcript_records.Converter), nothing stored;
  3. import: TranscriptImporter over every file into a fresh index (convert, then the ingest
     path every hook event takes: normalize, redact, attribute, commit, views);
  3w. the same import with the prepare worker (`ctxd import --prepare-worker on`): CPU time is
     then that of both processes (the worker is reaped at the end of the import);
  1, 2, 3 and 3w alternate for --rounds rounds (3 and 3w swap places every round; plus a last
  bare round); the best of each is compared, and import minus convert is what the shared
  ingest path costs;
  4. re-run with nothing new: in process, and the whole `ctxd import PATH` process;
  5. with --profile, one more import under cProfile (CPU clock): where its time goes, by stage.
The data is deleted at the end.

    python bench/bench_import.py [--mb 500] [--rounds 3] [--no-worker] [--profile]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from indexer.paths import StatePaths  # noqa: E402
from indexer.spool.lines import split_lines  # noqa: E402
from indexer.transcripts.records import Converter  # noqa: E402
from indexer.writer.catch_up import open_writer, writer_lock  # noqa: E402
from indexer.writer.import_ahead import import_files  # noqa: E402
from indexer.writer.importer import ImportStats, TranscriptImporter  # noqa: E402

CORPUS = Path(os.environ.get("CTXD_TEST_CORPUS") or REPO.parent / "shared" / "corpus") / "transcripts"
_UUID = re.compile(rb"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-)[0-9a-f]{6}")
_TOOLU = re.compile(rb"toolu_")


def generate(out: Path, megabytes: int) -> tuple[list[Path], int]:
    """Write copies of the corpus transcripts with fresh ids; return the files and bytes."""
    sources = [p.read_bytes() for p in sorted(CORPUS.rglob("*.jsonl"))]
    if not sources:
        sys.exit(f"no transcripts in {CORPUS}")
    files: list[Path] = []
    total, copy = 0, 0
    while total < megabytes * 1_000_000:
        tag = b"%06x" % copy
        for i, source in enumerate(sources):
            data = _UUID.sub(lambda m, t=tag: m.group(1) + t, source)
            data = _TOOLU.sub(b"toolu_" + tag, data)
            path = out / f"copy{copy:05d}" / f"{i:02d}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            # Finished sessions, as old transcripts are (a file written to in the last minutes
            # has its last turn's text read again on the next run).
            os.utime(path, (time.time() - 86400, time.time() - 86400))
            files.append(path)
            total += len(data)
        copy += 1
    return files, total


def bare(files: list[Path]) -> tuple[float, float]:
    """Wall and CPU seconds of decoding every line."""
    decode = msgspec.json.decode
    start, cpu = time.perf_counter(), time.process_time()
    for path in files:
        for line in path.read_bytes().split(b"\n"):
            if line:
                decode(line)
    return time.perf_counter() - start, time.process_time() - cpu


def convert(files: list[Path]) -> tuple[float, float]:
    """Wall and CPU seconds of turning every line into its hook events, as the import does
    before handing them to the ingest path."""
    start, cpu = time.perf_counter(), time.process_time()
    for path in files:
        lines, _ = split_lines(path.read_bytes(), 0)
        converter = Converter(str(path))
        for line_no, raw in enumerate(lines, 1):
            if raw.data:
                converter.convert(raw.data, raw.offset, line_no)
    return time.perf_counter() - start, time.process_time() - cpu


def import_all(
    state: Path, files: list[Path], worker: str = "off"
) -> tuple[tuple[float, float], ImportStats]:
    """Wall and CPU seconds (this process and the children it reaped: the prepare worker) of
    importing every file into `state`, and what it did."""
    paths = StatePaths(state)
    start, cpu = time.perf_counter(), _cpu()
    with writer_lock(paths):
        writer = open_writer(paths)
        try:
            writer.start()
            stats = import_files(TranscriptImporter(writer), files, worker=worker)
        finally:
            writer.close()
    return (time.perf_counter() - start, _cpu() - cpu), stats


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


# Disjoint parts of one import, measured by the cumulative CPU time of the function that does
# each: (label, file, function).
_STAGES = (
    ("transcript lines to hook events", "indexer/transcripts/records.py", "convert"),
    ("normalization", "indexer/prepare/normalize.py", "normalize"),
    ("redaction", "indexer/redact/text.py", "redact_entry"),
    ("agent attribution", "indexer/ingest/attribution.py", "attribute"),
    ("SQLite inserts, with the search index", "indexer/index/store.py", "insert_entries"),
    ("session catalog", "indexer/index/catalog.py", "update_sessions"),
    ("matching hook-captured events", "indexer/transcripts/offsets.py", "drop_known_events"),
    ("per-agent views", "indexer/views/update.py", "catch_up"),
)


def profile(state: Path, files: list[Path]) -> None:
    """Print the CPU time of each stage of one import (the profiler's own overhead weighs
    more on the Python stages than on SQLite's)."""
    import cProfile
    import pstats

    prof = cProfile.Profile(time.process_time)
    prof.enable()
    import_all(state, files)
    prof.disable()
    table = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    total = sum(row[2] for row in table.values())
    print(f"profile of one import, {total:.2f} s CPU under the profiler:")
    listed = 0.0
    for label, file, function in _STAGES:
        took = sum(
            row[3] for (f, _, name), row in table.items() if name == function and f.endswith(file)
        )
        listed += took
        print(f"  {label}: {took:.2f} s ({took / total:.0%})")
    rest = total - listed
    print(
        f"  the rest (reads, line splits, key separation, commits, setup): {rest:.2f} s"
        f" ({rest / total:.0%})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=500, help="megabytes of transcripts")
    parser.add_argument("--rounds", type=int, default=3, help="import rounds (fresh indexes)")
    parser.add_argument("--profile", action="store_true", help="also profile one import")
    parser.add_argument(
        "--no-worker", action="store_true", help="leave out the rounds with the prepare worker"
    )
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ctxd-bench-import-"))
    try:
        files, size = generate(tmp / "projects", args.mb)
        print(f"{len(files)} transcript files, {size / 1e6:.1f} MB")
        # Interleaved rounds on fresh indexes; the best of each (this machine is shared, and
        # other jobs only ever make a round slower).
        bares, converts, imports, helped = [], [], [], []
        for r in range(args.rounds):
            bares.append(bare(files))
            converts.append(convert(files))
            if args.no_worker or r % 2 == 0:
                took, stats = import_all(tmp / f".ctxd{r}", files)
                imports.append(took)
            if not args.no_worker:
                took_w, stats_w = import_all(tmp / f".ctxd{r}w", files, "on")
                helped.append(took_w)
                shutil.rmtree(tmp / f".ctxd{r}w")
                assert (stats_w.entries, stats_w.lines) == (stats.entries, stats.lines) or r % 2
            if not args.no_worker and r % 2 == 1:
                took, stats = import_all(tmp / f".ctxd{r}", files)
                imports.append(took)
        bares.append(bare(files))
        base, took = min(b[0] for b in bares), min(t[0] for t in imports)
        base_cpu, took_cpu = min(b[1] for b in bares), min(t[1] for t in imports)
        print(
            f"bare msgspec.json.decode: {size / 1e6 / base:.1f} MB/s"
            f" (rounds: {', '.join(f'{t[0]:.2f}' for t in bares)} s)"
        )
        print(
            f"import: {size / 1e6 / took:.1f} MB/s (rounds:"
            f" {', '.join(f'{t[0]:.2f}' for t in imports)} s; {stats.entries} entries,"
            f" {stats.lines} lines, {stats.duplicates} duplicates, {stats.quarantined} quarantined)"
        )
        print(f"ratio import / bare decode, best of each: {base / took:.3f} (goal >= 0.25)")
        # CPU time moves less than wall time when other jobs share the cores.
        print(f"same ratio in CPU time: {base_cpu / took_cpu:.3f}")
        if helped:
            took_w, took_w_cpu = min(t[0] for t in helped), min(t[1] for t in helped)
            print(
                f"import with the prepare worker: {size / 1e6 / took_w:.1f} MB/s (rounds:"
                f" {', '.join(f'{t[0]:.2f}' for t in helped)} s wall,"
                f" {', '.join(f'{t[1]:.2f}' for t in helped)} s CPU of both processes)"
            )
            print(
                f"ratio with the worker / bare decode, best of each: {base / took_w:.3f} wall"
                f" (goal >= 0.25); {took / took_w:.2f}x the import without it;"
                f" CPU of both processes {took_w_cpu / took_cpu:.2f}x the import's without it"
            )
        own, own_cpu = min(c[0] for c in converts), min(c[1] for c in converts)
        print(
            f"convert only (the import's own part): {size / 1e6 / own:.1f} MB/s,"
            f" {own / base:.2f}x the bare decode's time ({own_cpu / base_cpu:.2f}x in CPU time);"
            f" the ingest path after it: {took_cpu - own_cpu:.2f} s CPU"
            f" = {(took_cpu - own_cpu) / took_cpu:.0%} of the import's CPU time,"
            f" {(took_cpu - own_cpu) / base_cpu:.2f}x the bare decode's"
        )
        for r in range(1, args.rounds):
            shutil.rmtree(tmp / f".ctxd{r}")
        again, rerun = import_all(tmp / ".ctxd0", files)
        print(f"re-run, nothing new, in process: {again[0]:.3f} s ({rerun.lines} lines read)")
        start = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "summarizer.cli.app",
                "import",
                "--state-dir",
                str(tmp / ".ctxd0"),
                str(tmp / "projects"),
            ],
            cwd=REPO,
            check=True,
            capture_output=True,
        )
        whole = time.perf_counter() - start
        print(f"re-run, nothing new, whole `ctxd import` process: {whole:.3f} s (goal <= 1 s)")
        if args.profile:
            shutil.rmtree(tmp / ".ctxd0")
            profile(tmp / ".ctxd0", files)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
