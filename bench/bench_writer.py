"""The writer's share of ingest: entry inserts and view appends per entry, as the index grows.

Ingests bench_ingest's corpus-shaped spool (real hook payloads) once into a scratch index,
without views, and reads the entries back. Then, with those entries replayed as new sessions
up to --rows:
  1. inserts: fresh indexes, one per layout of the entries table's indexes, fed the same
     batches in turn (batch by batch, so the machine's load falls on each alike): the shipped
     layout (the tool-event dedupe key led by its session), the layout before it (the key
     alone), and no secondary index at all (the floor). CPU time and bytes written per entry,
     first and last quarter of the rows; the search index's trigger is left out (bench_ingest
     --search-cost measures it);
  2. views: the same batches appended to fresh view trees, in turn by the shipped view writer
     (session folders opened once) and by one that walks from the state dir to every view file
     it opens (the way before); CPU time per entry;
  3. whole passes (views and search index included) over the spool of --spool-events, into
     fresh state dirs, alternately with the batch insert as shipped and wrapped in a savepoint
     (the way before): bytes written and CPU time per event.

    python bench/bench_writer.py [--rows 200000] [--spool-events 50000] [--passes 1]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_ingest import build_spool  # noqa: E402

from indexer import safefs  # noqa: E402
from indexer.config import Config  # noqa: E402
from indexer.index import store  # noqa: E402
from indexer.index.store import StoredEntry  # noqa: E402
from indexer.index.transactions import transaction  # noqa: E402
from indexer.ingest.ingestor import Ingestor  # noqa: E402
from indexer.ingest.lines import Batch  # noqa: E402
from indexer.models import Entry  # noqa: E402
from indexer.paths import FILE_MODE, StatePaths  # noqa: E402
from indexer.views.writer import ViewWriter  # noqa: E402
from indexer.writer.catch_up import open_writer  # noqa: E402

BATCH = 800  # about what one 2 MB read of corpus-shaped lines holds

LAYOUTS = {
    "shipped (tool key led by session)": [],
    "before (tool key alone)": [
        "DROP INDEX entries_session_tool",
        "CREATE UNIQUE INDEX entries_tool ON entries(tool_key) WHERE tool_key IS NOT NULL",
    ],
    "no secondary index (floor)": [
        "DROP INDEX entries_session_tool",
        "DROP INDEX entries_agent",
        "DROP INDEX entries_event",
    ],
}


class WalkPerFile(ViewWriter):
    """The view writer's open path before: every view file opened by a walk of directory fds
    from the state dir (open, check and close each folder on the way)."""

    def _fd(self, name: tuple[str, str]) -> int:
        fd = self._fds.pop(name, None)
        if fd is None:
            flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = safefs.open_file(self.paths.root, self._path(name), flags, FILE_MODE)
            if len(self._fds) >= 128:
                self._drop(next(iter(self._fds)))
        self._fds[name] = fd
        return fd


class SavepointPerBatch(Ingestor):
    """The batch insert before: inside a savepoint, undone and redone one by one on a failure."""

    def _insert(self, batch: Batch) -> tuple[list[StoredEntry], int]:
        self.conn.execute("SAVEPOINT entries")
        inserted = super()._insert(batch)
        self.conn.execute("RELEASE entries")
        return inserted


def corpus_entries(tmp: Path, events: int) -> list[Entry]:
    """Decoded, redacted, attributed entries of `events` corpus-shaped spool lines."""
    paths = StatePaths(tmp / "source")
    paths.ensure()
    build_spool(paths.spool, events)
    shutil.copytree(paths.spool, tmp / "spool")  # kept for the whole passes
    writer = open_writer(paths, Config())
    writer.ingestor.on_batch = None
    writer.ingestor.keep_inserted = False
    writer.pass_once()
    entries = [se.entry for se in store.entries_after(writer.conn, 0, 10**9)]
    writer.close()
    shutil.rmtree(paths.root)
    return entries


def replays(entries: list[Entry], rows: int) -> list[list[Entry]]:
    """Batches of `rows` entries: the source replayed as new sessions, new calls, later times."""
    out: list[Entry] = []
    r = 0
    while len(out) < rows:
        for e in entries[: rows - len(out)]:
            out.append(
                msgspec.structs.replace(
                    e,
                    session_id=f"{e.session_id}-w{r}",
                    ts_ns=e.ts_ns + r * 10**15,
                    tool_use_id=f"{e.tool_use_id}-w{r}" if e.tool_use_id else "",
                )
            )
        r += 1
    return [out[i : i + BATCH] for i in range(0, len(out), BATCH)]


def written_bytes() -> int:
    with open("/proc/self/io") as f:
        return int(next(line for line in f if line.startswith("wchar:")).split()[1])


def timed(step: Callable[..., object], *args: object) -> tuple[float, int]:
    """CPU seconds and bytes written by step(*args)."""
    w0, c0 = written_bytes(), time.process_time()
    step(*args)
    return time.process_time() - c0, written_bytes() - w0


def insert_batch(conn: sqlite3.Connection, batch: list[Entry]) -> None:
    with transaction(conn):
        store.insert_entries(conn, batch)


def inserts(tmp: Path, batches: list[list[Entry]]) -> None:
    rows = sum(len(b) for b in batches)
    conns = {}
    for i, (name, statements) in enumerate(LAYOUTS.items()):
        conn = store.connect(tmp / f"layout{i}.db")
        conn.execute("UPDATE meta SET value='off' WHERE key='search.version'")  # no search
        for sql in statements:
            conn.execute(sql)
        conns[name] = conn
    quarter = rows // 4
    totals = {name: [0.0, 0, 0.0, 0] for name in conns}  # cpu, bytes: first and last quarter
    order = list(conns)
    done = 0
    for batch in batches:
        for name in order:
            cpu, wrote = timed(insert_batch, conns[name], batch)
            slot = 0 if done < quarter else 2 if done >= rows - quarter else -1
            if slot >= 0:
                totals[name][slot] += cpu
                totals[name][slot + 1] += wrote
        order.reverse()
        done += len(batch)
    print(f"inserts, {rows:,} entries in batches of {BATCH} (CPU time; bytes written):")
    for name, (c1, b1, c4, b4) in totals.items():
        conn = conns[name]
        conn.close()
        print(
            f"  {name:<36} first quarter {1e6 * c1 / quarter:5.1f} µs {b1 / quarter:6.0f} B;"
            f" last quarter {1e6 * c4 / quarter:5.1f} µs {b4 / quarter:6.0f} B per entry"
            f"  (last/first time {c4 / c1:.2f})"
        )


def views(tmp: Path, batches: list[list[Entry]]) -> None:
    rows = sum(len(b) for b in batches)
    writers: dict[str, ViewWriter] = {}
    for name, cls in (
        ("shipped (folders opened once)", ViewWriter),
        ("before (walk per file)", WalkPerFile),
    ):
        paths = StatePaths(tmp / f"views-{cls.__name__}")
        paths.ensure()
        writers[name] = cls(paths)
    cpu = dict.fromkeys(writers, 0.0)
    order = list(writers)
    next_id = 1
    for batch in batches:
        stored = [StoredEntry(next_id + i, e) for i, e in enumerate(batch)]
        next_id += len(batch)
        for name in order:
            cpu[name] += timed(writers[name].append, stored)[0]
        order.reverse()
    files = sum(len(f) for _, _, f in os.walk(next(iter(writers.values())).paths.sessions))
    print(f"views, {rows:,} entries into {files:,} view files (CPU time):")
    for name, w in writers.items():
        w.close()
        print(f"  {name:<36} {1e6 * cpu[name] / rows:5.1f} µs per entry")


def passes(tmp: Path, rounds: int) -> None:
    results: dict[str, list[tuple[float, int, int]]] = {"shipped": [], "savepoint (before)": []}
    for r in range(rounds):
        for name, runs in results.items():
            runs.append(one_pass(tmp, tmp / f"pass-{r}-{len(runs)}", name == "shipped"))
    print("whole passes with views and the search index (CPU time; bytes written):")
    for name, runs in results.items():
        figures = "; ".join(f"{1e6 * cpu / n:5.1f} µs {wrote / n:6.0f} B" for cpu, wrote, n in runs)
        print(f"  {name:<36} {figures} per event ({runs[0][2]:,} events)")


def one_pass(tmp: Path, root: Path, shipped: bool) -> tuple[float, int, int]:
    """A daemon pass over the kept spool in a fresh state dir: CPU s, bytes written, events."""
    paths = StatePaths(root)
    paths.ensure()
    for segment in sorted((tmp / "spool").iterdir()):
        os.link(segment, paths.spool / segment.name)
    writer = open_writer(paths, Config())
    if not shipped:
        ingestor = SavepointPerBatch(paths, Config(), writer.conn)
        ingestor.on_batch = writer.ingestor.on_batch
        writer.ingestor = ingestor
    events: list[int] = []
    cpu, wrote = timed(lambda: events.append(writer.pass_once().entries))
    writer.close()
    shutil.rmtree(paths.root)
    return cpu, wrote, events[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--spool-events", type=int, default=50_000, help="distinct source events")
    parser.add_argument("--passes", type=int, default=1, help="rounds of whole passes (0: none)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        entries = corpus_entries(Path(tmp), min(args.spool_events, args.rows))
        batches = replays(entries, args.rows)
        inserts(Path(tmp), batches)
        views(Path(tmp), batches)
        passes(Path(tmp), args.passes)


if __name__ == "__main__":
    main()
