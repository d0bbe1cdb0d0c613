"""Token counting throughput: TokenCounter.count vs bare Encoding.encode_ordinary on ~20 MB.

The two are timed in alternating order, pass after pass (count first on even passes, bare
first on odd ones), and each keeps its best pass: neither gets the warm caches by position.

    python bench/bench_tokens.py [--mb 20] [--repeat 4]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from summarizer.common.tokens import get_counter

CORPUS = Path(os.environ.get("CTXD_TEST_CORPUS") or Path(__file__).resolve().parents[2] / "shared" / "corpus")


def _strings(value: object) -> Iterator[str]:
    # The daemon counts the text inside records (prompts, tool outputs, messages), not JSON syntax.
    if isinstance(value, str):
        if value:
            yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def corpus_texts() -> list[str]:
    """One text per JSONL record under the corpus (its string values joined by newlines)."""
    texts = []
    for path in sorted(CORPUS.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="surrogatepass").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            text = "\n".join(_strings(record))
            if text:
                texts.append(text)
    return texts


def generated_texts() -> list[str]:
    """Fallback when the corpus is absent: prose and code records of mixed sizes."""
    prose = "The tailer reads the spool from its watermark and hands complete lines to ingest. "
    code = "def handle(event: dict) -> None:\n    if event.get('kind') == 'failure':\n        log(event)\n"
    return [(prose * (i % 7 + 1)) + (code * (i % 5)) + f"record {i}\n" for i in range(20_000)]


def build(target_bytes: int) -> tuple[list[str], str]:
    """Records cycled up to `target_bytes` of UTF-8, and a description of where they came from."""
    texts = corpus_texts() if CORPUS.is_dir() else []
    source = f"{CORPUS} ({len(texts)} records)"
    if not texts:
        texts, source = generated_texts(), "generated prose+code"
    out: list[str] = []
    size = 0
    while size < target_bytes:
        for text in texts:
            out.append(text)
            size += len(text.encode("utf-8", "surrogatepass"))
            if size >= target_bytes:
                break
    return out, source


def chunks(texts: list[str], chunk_bytes: int) -> list[str]:
    """The same text regrouped into ~chunk_bytes pieces (long-document counting)."""
    out, cur, size = [], [], 0
    for text in texts:
        cur.append(text)
        size += len(text.encode("utf-8", "surrogatepass"))
        if size >= chunk_bytes:
            out.append("\n".join(cur))
            cur, size = [], 0
    if cur:
        out.append("\n".join(cur))
    return out


def _seconds(fn: Callable[[str], object], texts: list[str]) -> float:
    start = time.perf_counter()
    for text in texts:
        fn(text)
    return time.perf_counter() - start


def best_interleaved(
    fns: list[Callable[[str], object]], texts: list[str], repeat: int
) -> list[float]:
    """Best pass of each function; passes alternate which function runs first."""
    best = [float("inf")] * len(fns)
    for n in range(repeat):
        order = range(len(fns)) if n % 2 == 0 else reversed(range(len(fns)))
        for i in order:
            best[i] = min(best[i], _seconds(fns[i], texts))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=20.0, help="MB of text (default 20)")
    parser.add_argument("--repeat", type=int, default=4, help="best of N passes (default 4)")
    args = parser.parse_args()

    start = time.perf_counter()
    counter = get_counter()
    load = time.perf_counter() - start
    encoding = counter._enc  # the bare tiktoken.Encoding the counter wraps

    records, source = build(int(args.mb * 1_000_000))
    megabytes = sum(len(t.encode("utf-8", "surrogatepass")) for t in records) / 1_000_000
    print(f"encoding load: {load:.3f} s; text: {megabytes:.1f} MB from {source}")
    for label, texts in (
        (f"per record ({len(records)} texts)", records),
        ("1 MB chunks", chunks(records, 1_000_000)),
    ):
        counted, bare = best_interleaved(
            [counter.count, encoding.encode_ordinary], texts, max(2, args.repeat)
        )
        print(
            f"{label:>28}: TokenCounter.count {megabytes / counted:6.2f} MB/s, "
            f"encode_ordinary {megabytes / bare:6.2f} MB/s, count/bare speed {bare / counted:.3f}"
        )


if __name__ == "__main__":
    main()
