"""Many real hook processes appending at once: every spool line intact, every event indexed once."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from helpers import hook_env, parse_envelope, payload, query, run_cli, run_hook, spool_lines

WORKERS = 16
PER_WORKER = 200
SESSIONS = ("7d1c0a52-0c56-4d8e-9e4b-2f0a1e5c9b11", "c3e9f0d4-5a1b-4e2f-8c7d-6b5a4f3e2d10")


def event_payload(worker: int, i: int) -> bytes:
    """A realistic tool event; every 25th is ~70 KB so writes exceed PIPE_BUF and pipe buffers."""
    tool_use_id = f"toolu_w{worker:02d}_{i:03d}"
    content = ("line of generated output\n" * 2900) if i % 25 == 0 else f"print({i})\n"
    return payload(
        session_id=SESSIONS[worker % 2],
        hook_event_name="PostToolUse" if i % 2 else "PreToolUse",
        tool_name="Write",
        tool_use_id=tool_use_id,
        tool_input={"file_path": f"/home/dev/app/w{worker}/f{i}.py", "content": content},
    )


def test_16_processes_x_200_hooks_every_event_indexed_exactly_once(state_dir: Path) -> None:
    env = hook_env(state_dir)
    failures: list[str] = []
    stop = threading.Event()
    ingest_runs: list[str] = []

    def worker(w: int) -> None:
        for i in range(PER_WORKER):
            proc = run_hook(event_payload(w, i), env, timeout=60)
            if proc.returncode != 0 or proc.stdout:
                failures.append(f"w{w} i{i}: rc={proc.returncode} out={proc.stdout[:100]!r}")

    def ingester() -> None:
        # Catch-up passes while the hooks write: partial last lines must never be indexed (I4).
        while not stop.is_set():
            proc = run_cli("ingest", state_dir=state_dir)
            ingest_runs.append(proc.stdout if proc.returncode == 0 else "ERR " + proc.stderr)
            time.sleep(0.2)

    start = time.monotonic()
    background = threading.Thread(target=ingester, daemon=True)
    background.start()
    try:
        with ThreadPoolExecutor(WORKERS) as pool:
            list(pool.map(worker, range(WORKERS)))
    finally:
        stop.set()
        background.join(timeout=120)
    hooks_s = time.monotonic() - start
    total = WORKERS * PER_WORKER
    assert not failures, failures[:5]
    assert not [r for r in ingest_runs if r.startswith("ERR")], ingest_runs

    # Every spool line is one intact envelope with exactly the payload that was sent.
    lines = spool_lines(state_dir)
    assert len(lines) == total
    seen: dict[str, bytes] = {}
    for line in lines:
        env_ = parse_envelope(line)
        tool_use_id = env_["event"]["tool_use_id"]
        assert tool_use_id not in seen
        seen[tool_use_id] = line
    for w in range(WORKERS):
        for i in range(PER_WORKER):
            line = seen[f"toolu_w{w:02d}_{i:03d}"]
            assert parse_envelope(line)["event"] == json.loads(event_payload(w, i))

    proc = run_cli("ingest", state_dir=state_dir)
    assert proc.returncode == 0, proc.stderr
    ((entries, distinct),) = query(
        state_dir, "SELECT count(*), count(DISTINCT tool_use_id) FROM entries"
    )
    assert (entries, distinct) == (total, total)
    assert query(state_dir, "SELECT count(*) FROM quarantine") == [(0,)]
    by_session = dict(query(state_dir, "SELECT session_id, count(*) FROM entries GROUP BY 1"))
    assert by_session == {SESSIONS[0]: total // 2, SESSIONS[1]: total // 2}
    # One more pass finds nothing new: offsets and entries were committed together.
    again = run_cli("ingest", state_dir=state_dir)
    assert again.stdout.startswith("indexed 0 entries from 0 lines"), again.stdout
    print(
        f"\n{total} hook runs in {hooks_s:.1f} s ({hooks_s / total * 1000:.1f} ms each, "
        f"{WORKERS} in parallel) with {len(ingest_runs)} concurrent ingest passes"
    )
