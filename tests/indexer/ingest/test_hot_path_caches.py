"""The small caches of the ingest hot path give the same answers as the uncached code."""

from __future__ import annotations

import base64
import time

from indexer.redact import decoded
from indexer.redact.text import redact_text
from indexer.views.entry_lines import iso_utc


def test_base64_runs_decode_alike_from_the_table_and_the_table_stays_bounded() -> None:
    key = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8" * 5
    blob = base64.b64encode(f"export ANTHROPIC_API_KEY={key}".encode()).decode()
    line = f"echo {blob} | base64 -d".encode()
    start = line.index(blob.encode())
    first = decoded.base64_texts(line, [start])
    again = decoded.base64_texts(line, [start])
    assert first == again and key in first[0]
    # A secret behind an already-seen run is still redacted, every time.
    for _ in range(2):
        assert blob not in redact_text(f"echo {blob} | base64 -d")
    for i in range(decoded._CACHED_RUNS + 10):
        run = base64.b64encode(f"harmless text number {i:06d}".encode())
        decoded.base64_texts(b" " + run, [1])
    assert len(decoded._RUN_TEXTS) <= decoded._CACHED_RUNS


def test_iso_utc_with_the_last_second_remembered_matches_strftime() -> None:
    t0 = 1_790_000_000_000_000_000
    for ts in [t0 + i * 37_000_000 for i in range(200)] + [t0 - 5, t0, t0 + 999_999_999]:
        seconds, rem = divmod(ts, 1_000_000_000)
        expected = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        assert iso_utc(ts) == f"{expected}.{rem // 1_000_000:03d}Z"
