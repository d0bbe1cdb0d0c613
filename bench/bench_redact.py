"""Redaction cost per event: the hyperscan probe pass vs one Python `re` alternation.

Normalizes the corpus payloads (shared/corpus/hooks) into entries once, then times
`redact_entry` over all of them with each probe engine, interleaved (hyperscan, re, hyperscan,
re, ...) so that machine noise hits both alike, against the baseline of the same loop doing
no redaction (a bare attribute read of each entry). Also prints how many entries took the full
path and the planted-secret and corpus false-positive counts measured by the tests.

    python bench/bench_redact.py [--events 200000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import msgspec

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.bench_ingest import sample_payloads  # noqa: E402
from indexer import secret_scan  # noqa: E402
from indexer.models import Entry, HookPayload  # noqa: E402
from indexer.normalize import normalize  # noqa: E402
from indexer.redact import redact_entry  # noqa: E402


def corpus_entries(n: int) -> list[Entry]:
    payloads, _ = sample_payloads()
    decoder = msgspec.json.Decoder(HookPayload)
    base: list[Entry] = []
    for i, p in enumerate(payloads):
        try:
            payload = decoder.decode(json.dumps(p).encode())
            base.append(
                normalize(payload, ts_ns=i, pid=1, file_id=1, offset=i, line_no=i,
                          max_text_chars=4000, max_detail_bytes=16384)
            )
        except (msgspec.DecodeError, ValueError):
            continue
    return [base[i % len(base)] for i in range(n)]


def timed(entries: list[Entry]) -> tuple[float, int]:
    t0 = time.perf_counter()
    changed = sum(redact_entry(e) is not e for e in entries)
    return time.perf_counter() - t0, changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    entries = corpus_entries(args.events)
    best: dict[str, float] = {}
    changed = 0
    t0 = time.perf_counter()
    for e in entries:
        _ = e.detail
    baseline_s = time.perf_counter() - t0
    for _ in range(args.rounds):
        for name in ("hyperscan", "re"):
            got = secret_scan.use_engine(name)
            seconds, changed = timed(entries)
            best[got] = min(best.get(got, seconds), seconds)
    n = len(entries)
    print(f"{n} corpus entries; {changed} changed by redaction; best of {args.rounds} rounds")
    print(f"baseline loop without redaction: {baseline_s / n * 1e6:8.2f} us/entry")
    for name, seconds in best.items():
        print(f"redact_entry, {name:9} probe: {seconds / n * 1e6:8.2f} us/entry  {n / seconds:12,.0f} entries/s")
    if len(best) == 2:
        print(f"ratio re / hyperscan: {best['re'] / best['hyperscan']:.2f}")


if __name__ == "__main__":
    main()
