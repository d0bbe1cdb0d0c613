"""Redaction cost per event: the hyperscan probe pass vs one Python `re` alternation.

Normalizes the corpus payloads (shared/corpus/hooks) into entries once, then times, interleaved
round by round so that machine noise hits all alike:
  - baseline: the redaction before decoded-form matching (the eight literal gates over the
    stored fields and the raw detail, then the earlier rules; kept in indexer.redact.raw as
    `may_contain_secret` / `redact_bytes`), on the same entries;
  - redact_entry with the hyperscan probe pass;
  - redact_entry with the Python `re` probe (the fallback), on the first `--re-events` entries
    (it is two orders of magnitude slower);
and the CPU time of compiling the hyperscan probe database, which every process that redacts
pays once, at its first redaction.

    python bench/bench_redact.py [--events 200000] [--re-events 5000] [--rounds 3]
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
from indexer.models import Entry, HookPayload  # noqa: E402
from indexer.prepare.normalize import normalize  # noqa: E402
from indexer.redact import scan as secret_scan  # noqa: E402
from indexer.redact.raw import may_contain_secret, redact_bytes  # noqa: E402
from indexer.redact.text import redact_entry  # noqa: E402


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


def _before(entry: Entry) -> bool:
    """The earlier redaction's work on one entry: gates over the stored fields, then rules."""
    detail = bytes(entry.detail)
    texts = [entry.output_summary, entry.error, entry.cwd]
    probe = "\n".join(texts).encode("utf-8", "surrogatepass") + b"\n" + detail
    if not may_contain_secret(probe):
        return False
    return redact_bytes(detail) is not detail


def _compile_cpu() -> float:
    t0 = time.process_time()
    secret_scan.use_engine("hyperscan")
    return time.process_time() - t0


def timed(entries: list[Entry], baseline: bool = False) -> tuple[float, int]:
    t0 = time.perf_counter()
    if baseline:
        changed = sum(_before(e) for e in entries)
    else:
        changed = sum(redact_entry(e) is not e for e in entries)
    return time.perf_counter() - t0, changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--re-events", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    entries = corpus_entries(args.events)
    compile_s = min(_compile_cpu() for _ in range(args.rounds))
    per_entry: dict[str, float] = {}
    for _ in range(args.rounds):
        for wanted in ("before", "hyperscan", "re"):
            sample = entries[: args.re_events] if wanted == "re" else entries
            name = wanted if wanted == "before" else secret_scan.use_engine(wanted)
            seconds, _ = timed(sample, baseline=name == "before")
            each = seconds / len(sample)
            per_entry[name] = min(per_entry.get(name, each), each)
    print(f"{len(entries)} corpus entries ({args.re_events} for re); best of {args.rounds} rounds")
    labels = {
        "before": "earlier redaction (baseline)",
        "hyperscan": "redact_entry, hyperscan probe",
        "re": "redact_entry, re probe",
    }
    for name, seconds in per_entry.items():
        print(f"{labels[name]:30}: {seconds * 1e6:8.2f} us/entry  {1 / seconds:10,.0f} entries/s")
    print(f"{'hyperscan probe compile':30}: {compile_s * 1e3:8.1f} ms CPU (once per process)")
    base = per_entry["before"]
    for name in ("hyperscan", "re"):
        if name in per_entry:
            print(f"ratio {name} / baseline: {per_entry[name] / base:.2f}")


if __name__ == "__main__":
    main()
