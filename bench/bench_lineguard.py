"""Cost of the pre-decode line guard (nesting depth) against bare msgspec decoding, per line.

Uses the corpus-shaped lines of bench_ingest (real hook payloads when ../shared/corpus is
present). Rounds alternate bare decode and guard + decode so that machine noise hits both
alike; each line is guarded and decoded back to back, as ingest does.

    python bench/bench_lineguard.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import msgspec

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_ingest import sample_payloads  # noqa: E402

from ctxd_hook.hook import build_line  # noqa: E402
from indexer.models import Envelope  # noqa: E402
from indexer.spool.lineguard import nesting_error  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    docs, source = sample_payloads()
    lines = []
    for d in docs:
        text = json.dumps(d, separators=(",", ":"), ensure_ascii=False)
        try:
            lines.append(build_line(text.encode(), 1, 1))
        except UnicodeEncodeError:  # lone surrogates: send them escaped, as Claude Code does
            continue  # a lone surrogate: the repair path, not what this measures
    decoder = msgspec.json.Decoder(Envelope)
    # As ingest does it: each line is checked, then decoded, while it is in the CPU cache.
    guarded_s, bare_s = [], []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        for line in lines:
            decoder.decode(line)
        bare_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for line in lines:
            nesting_error(line)
            decoder.decode(line)
        guarded_s.append(time.perf_counter() - t0)
    b = statistics.median(bare_s) / len(lines) * 1e6
    g = statistics.median(guarded_s) / len(lines) * 1e6
    slow = sum(1 for line in lines if line.count(b"[") + line.count(b"{") > 256)
    print(f"{len(lines)} lines from {source}, {slow} with more than 256 opening brackets")
    print(
        f"envelope decode: {b:.2f} µs/line; guard + decode: {g:.2f} µs/line; "
        f"guard adds {g - b:.2f} µs/line ({g / b:.2f}x)"
    )


if __name__ == "__main__":
    main()
