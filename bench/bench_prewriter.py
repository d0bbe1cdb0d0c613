"""CPU time per line of the ingest stages before the SQLite writer, against another checkout.

The stages a spool line goes through before its entry reaches the writer (line guard, decode,
normalize, redaction, the checks) run on corpus-shaped lines (those of bench_ingest) in a
child process per tree, each measured as CPU time, best of the rounds. With `--baseline DIR`
(a checkout of the code to compare with, e.g. `git archive main | tar -x -C /tmp/base`) the
two trees' children alternate round by round, so machine load moves both alike.

The last line prints what handing the work to a worker process would cost the writer
instead: encoding an entry (with what the session catalog reads of its payload) and
decoding it on the other side.

    python bench/bench_prewriter.py [--lines 20000] [--rounds 3] [--baseline /tmp/base]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
STAGES = ("line guard", "normalize", "redaction", "all stages (one line, start to end)")


def child(tree: Path, lines_file: Path, rounds: int, transfer: bool) -> dict[str, float]:
    """Measure in this process with `tree`'s indexer; return µs per line by stage."""
    sys.path.insert(0, str(tree))
    import msgspec

    from indexer.config import Config
    from indexer.ingest import lines as ingest_lines
    from indexer.models import Entry
    from indexer.prepare import line as prepare
    from indexer.prepare.normalize import normalize
    from indexer.redact.text import redact_entry
    from indexer.spool.lineguard import nesting_error
    from indexer.spool.lines import RawLine, decode_envelope
    from indexer.spool.tailer import FileState

    lines = lines_file.read_bytes().split(b"\n")[:-1]
    cfg = Config().ingest
    state = FileState(1, "bench.jsonl", 0, 0, 0, b"", 0, b"", 0)

    class Unattributed:  # attribution reads the index: it stays with the writer
        def attribute(self, e: Any) -> Any:
            return e

    def read_all() -> Any:
        batch = ingest_lines.Batch(state)
        registry = Unattributed()
        offset = 0
        for n, line in enumerate(lines, 1):
            ingest_lines._ingest_line(batch, RawLine(offset, line), n, cfg, registry)  # type: ignore[arg-type]
            offset += len(line) + 1
        return batch

    envs = [decode_envelope(line) for line in lines]
    payloads = [prepare._PAYLOAD.decode(e.event) for e in envs]

    def normalize_all() -> list[Any]:
        return [
            normalize(
                p,
                ts_ns=e.ts_ns,
                pid=e.pid,
                file_id=1,
                offset=0,
                line_no=1,
                max_text_chars=cfg.max_text_chars,
                max_detail_bytes=cfg.max_detail_bytes,
            )
            for p, e in zip(payloads, envs, strict=True)
        ]

    entries = normalize_all()
    batch = read_all()
    assert len(batch.pending) == len(lines), (len(batch.pending), batch.quarantined[:1])
    work = {
        "line guard": lambda: [nesting_error(line) for line in lines],
        "normalize": normalize_all,
        "redaction": lambda: [redact_entry(e) for e in entries],
        "all stages (one line, start to end)": read_all,
    }
    if transfer:
        enc = msgspec.json.Encoder()
        dec = msgspec.json.Decoder(list[tuple[Entry, str, str]])
        # An empty Raw detail is no JSON value: sent as null (a real hand-off would say so).
        null = msgspec.Raw(b"null")
        items = [
            (
                msgspec.structs.replace(e, detail=e.detail if len(e.detail) else null),
                p.session_title,
                p.reason,
            )
            for (e, _), p in zip(batch.pending, payloads, strict=True)
        ]
        blob = enc.encode(items)
        work["worker hand-off: encode"] = lambda: enc.encode(items)
        work["worker hand-off: decode (the writer's share)"] = lambda: dec.decode(blob)
    out = {}
    for name, fn in work.items():
        best = float("inf")
        for _ in range(rounds):
            t0 = time.process_time()
            fn()
            best = min(best, time.process_time() - t0)
        out[name] = 1e6 * best / len(lines)
    return out


def run_child(tree: Path, lines_file: Path, rounds: int, transfer: bool) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--child", str(tree), "--lines-file", str(lines_file)]
    cmd += ["--rounds", str(rounds)] + (["--transfer"] if transfer else [])
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, env=os.environ)
    result: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3, help="per child, and children per tree")
    parser.add_argument("--baseline", type=Path, help="another checkout to compare with")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--lines-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--transfer", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.lines_file, args.rounds, args.transfer)))
        return
    sys.path.insert(0, str(REPO / "bench"))
    from bench_ingest import sample_payloads, spool_lines

    with tempfile.TemporaryDirectory() as tmp:
        lines_file = Path(tmp) / "lines"
        with lines_file.open("wb") as f:
            for line in spool_lines(args.lines):
                f.write(line.strip(b"\n") + b"\n")  # no torn-fragment separators here
        trees = [("this tree", REPO)] + ([("baseline", args.baseline)] if args.baseline else [])
        best: dict[str, dict[str, float]] = {name: {} for name, _ in trees}
        for _ in range(args.rounds):
            for name, tree in trees:
                got = run_child(tree, lines_file, args.rounds, name == "this tree")
                for stage, us in got.items():
                    best[name][stage] = min(us, best[name].get(stage, float("inf")))
    print(f"{args.lines:,} lines shaped like the {sample_payloads()[1]}; CPU µs per line, best of")
    print(f"{args.rounds} rounds x {args.rounds} children per tree, trees alternated")
    mine = best["this tree"]
    for stage in [*STAGES, *(s for s in mine if s not in STAGES)]:
        row = f"  {stage:<46} {mine[stage]:7.2f}"
        if args.baseline and stage in best["baseline"]:
            base = best["baseline"][stage]
            row += f"   baseline {base:7.2f}   ratio {mine[stage] / base:.2f}"
        print(row)


if __name__ == "__main__":
    main()
