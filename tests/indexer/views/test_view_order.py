"""Views in event-time order when events are stored out of it (a backfill, racing hooks).

Spool lines are written here with chosen times (`build_line`), so that later lines carry older
events, as a transcript imported after the hooks captured the rest of its session does. The
reference is `render(index)` (tests/indexer/views/test_views.py): every view's entries by
(ts_ns, pid), from the committed entries alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_views import SEALED, SESSION, base, make_state, on_disk, render, task_done, task_start

from ctxd_hook.hook import build_line
from indexer import fileio
from indexer.config import Config, IngestConfig
from indexer.index import store
from indexer.paths import StatePaths
from indexer.views import writer as view_writer
from indexer.writer.catch_up import catch_up, open_writer, writer_lock

T0 = 1_760_000_000_000_000_000  # ns
MS = 1_000_000


def spool_at(paths: StatePaths, *events: tuple[int, dict[str, Any]], pid: int = 4242) -> None:
    """Spool events stamped with the given times, in the order given."""
    with (paths.spool / SEALED).open("ab") as f:
        for ts_ns, p in events:
            f.write(build_line(json.dumps(p).encode(), ts_ns, pid))


def prompt(n: int, **fields: Any) -> dict[str, Any]:
    return base("UserPromptSubmit", prompt=f"request {n}", **fields)


def read_tool(n: int) -> dict[str, Any]:
    return base(
        "PreToolUse",
        tool_name="Read",
        tool_use_id=f"toolu_r{n}",
        tool_input={"file_path": f"/app/f{n}.py"},
    )


def ingest(paths: StatePaths, **ingest_cfg: Any) -> None:
    assert not catch_up(paths, Config(ingest=IngestConfig(**ingest_cfg))).by_daemon


def stamps(path: Path) -> list[str]:
    return [json.loads(x)["timestamp"] for x in path.read_bytes().splitlines()]


def unsorted_notes(paths: StatePaths) -> list[tuple[Any, ...]]:
    conn = store.connect(paths.index_db)
    try:
        return conn.execute("SELECT folder, file FROM unsorted_views").fetchall()
    finally:
        conn.close()


def test_older_events_stored_last_are_put_in_their_place(tmp_path: Path) -> None:
    paths = make_state(tmp_path)
    spool_at(paths, *[(T0 + i * 1000 * MS, read_tool(i)) for i in range(10, 20)])
    ingest(paths)
    # A backfill: the session's first ten events, stored after the last ten.
    spool_at(paths, *[(T0 + i * 1000 * MS, read_tool(i)) for i in range(10)])
    ingest(paths)
    main = paths.sessions / SESSION / "main.jsonl"
    assert on_disk(paths) == render(paths)
    assert stamps(main) == sorted(stamps(main)) and len(stamps(main)) == 20
    assert unsorted_notes(paths) == []


def test_a_backfill_over_many_batches_rewrites_each_view_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = make_state(tmp_path)
    spool_at(paths, *[(T0 + i * 1000 * MS, prompt(i)) for i in range(100, 110)])
    ingest(paths)
    cuts: list[tuple[str, str]] = []
    real = view_writer.ViewWriter.cut_tail

    def cut_tail(self: view_writer.ViewWriter, name: tuple[str, str], since: str) -> bool:
        cuts.append(name)
        return real(self, name, since)

    monkeypatch.setattr(view_writer.ViewWriter, "cut_tail", cut_tail)
    spool_at(paths, *[(T0 + i * 1000 * MS, prompt(i)) for i in range(100)])
    ingest(paths, batch_lines=7)  # 15 batches of older events
    assert cuts == [(SESSION, "main.jsonl")]
    assert on_disk(paths) == render(paths)


def test_agent_and_instruction_views_are_ordered_too(tmp_path: Path) -> None:
    paths = make_state(tmp_path)
    late = [
        (T0 + 50_000 * MS, task_start("toolu_t2", "beta", "coder", "Build the UI")),
        (T0 + 60_000 * MS, task_done("toolu_t2", "beta", "coder", "cc-b", "UI done")),
    ]
    early = [
        (T0 + 10_000 * MS, task_start("toolu_t1", "alpha", "coder", "Build the API")),
        (T0 + 20_000 * MS, task_done("toolu_t1", "alpha", "coder", "cc-a", "API done")),
    ]
    other = {"session_id": "7e1d2c3b-0000-4000-8000-000000000002"}
    spool_at(paths, *late, (T0 + 55_000 * MS, prompt(1, **other)))
    ingest(paths)
    spool_at(paths, *early, (T0 + 5_000 * MS, prompt(0, **other)))
    ingest(paths)
    assert on_disk(paths) == render(paths)
    instructions = paths.sessions / "all-agent-instructions.jsonl"
    assert [json.loads(x)["agent_id"] for x in instructions.read_bytes().splitlines()] == [
        "alpha",
        "alpha",
        "beta",
        "beta",
    ]


def test_events_of_one_millisecond_follow_their_pid(tmp_path: Path) -> None:
    # Two hooks that fired in the same millisecond and wrote in the opposite order.
    paths = make_state(tmp_path)
    spool_at(paths, (T0 + 5, read_tool(1)), pid=900)
    spool_at(paths, (T0 + 5, read_tool(2)), pid=100)
    ingest(paths)
    assert on_disk(paths) == render(paths)
    main = paths.sessions / SESSION / "main.jsonl"
    assert [json.loads(x)["tool_use_id"] for x in main.read_bytes().splitlines()] == [
        "toolu_r2",
        "toolu_r1",
    ]


def test_a_restarted_writer_orders_what_it_appends_after_the_views_last_millisecond(
    tmp_path: Path,
) -> None:
    # The writer knows a view's newest event only to the millisecond after a restart: an
    # event of that millisecond goes to its place all the same.
    paths = make_state(tmp_path)
    spool_at(paths, (T0 + 700_000, read_tool(1)), pid=500)
    ingest(paths)
    spool_at(paths, (T0 + 300_000, read_tool(2)), pid=500)  # earlier, same millisecond
    spool_at(paths, (T0 + 900_000, read_tool(3)), pid=500)  # later, same millisecond
    ingest(paths)
    assert on_disk(paths) == render(paths)


class _Killed(BaseException):
    """Stands for SIGKILL."""


def test_a_kill_between_the_appends_and_their_commit_still_orders_the_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The out-of-order lines reached the file, but the note saying so was in the transaction
    # the kill rolled back: the next writer finds the lines written and orders them anyway.
    paths = make_state(tmp_path)
    spool_at(paths, *[(T0 + i * 1000 * MS, read_tool(i)) for i in range(5, 10)])
    ingest(paths)
    spool_at(paths, *[(T0 + i * 1000 * MS, read_tool(i)) for i in range(5)])

    def killed(*args: Any) -> None:
        raise _Killed

    from indexer.views import order as view_order

    monkeypatch.setattr(view_order, "note", killed)
    with writer_lock(paths):
        writer = open_writer(paths, Config())
        try:
            writer.start()
            with pytest.raises(_Killed):
                writer.pass_once()
        finally:
            writer.close()
    monkeypatch.undo()
    main = paths.sessions / SESSION / "main.jsonl"
    assert len(stamps(main)) == 10 and stamps(main) != sorted(stamps(main))
    ingest(paths)
    assert on_disk(paths) == render(paths)


@pytest.mark.parametrize("cut_at", ["after the cut", "mid-tail"])
def test_a_kill_while_a_view_is_put_in_order_is_finished_by_the_next_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut_at: str
) -> None:
    paths = make_state(tmp_path)
    spool_at(paths, *[(T0 + i * 1000 * MS, read_tool(i)) for i in range(50, 60)])
    ingest(paths)
    spool_at(paths, *[(T0 + i * 1000 * MS, read_tool(i)) for i in range(50)])
    real = fileio.write_all

    def write_then_die(fd: int, data: bytes) -> None:
        if cut_at == "mid-tail":
            real(fd, data[: len(data) // 2])  # half the tail, the last line torn
        raise _Killed

    real_cut = view_writer.ViewWriter.cut_tail

    def cut_then_fail_writes(self: view_writer.ViewWriter, name: Any, since: str) -> bool:
        done = real_cut(self, name, since)
        monkeypatch.setattr(view_writer, "write_all", write_then_die)
        return done

    monkeypatch.setattr(view_writer.ViewWriter, "cut_tail", cut_then_fail_writes)
    with writer_lock(paths):
        writer = open_writer(paths, Config())
        try:
            writer.start()
            with pytest.raises(_Killed):
                writer.pass_once()
        finally:
            writer.close()
    monkeypatch.undo()
    assert unsorted_notes(paths) == [(SESSION, "main.jsonl")]
    assert on_disk(paths) != render(paths)
    ingest(paths)
    assert on_disk(paths) == render(paths)
    assert unsorted_notes(paths) == []


def test_rebuild_writes_views_in_event_time_order(tmp_path: Path) -> None:
    paths = make_state(tmp_path)
    spool_at(paths, *[(T0 + i * 1000 * MS, prompt(i)) for i in range(20, 30)])
    spool_at(paths, *[(T0 + i * 1000 * MS, prompt(i)) for i in range(20)])
    ingest(paths)
    before = on_disk(paths)
    for path in before:
        path.unlink()
    from indexer.views import update as views

    conn = store.connect(paths.index_db)
    try:
        views.rebuild_all(conn, paths)
    finally:
        conn.close()
    assert on_disk(paths) == before == render(paths)


def test_a_view_emptied_by_an_agent_move_after_its_note_leaves_no_file(tmp_path: Path) -> None:
    # Claude Code's id is seen before its Agent call: its events go to a view named after it,
    # one of them older than the other (noted for ordering); the Agent call and its result
    # then move them to the named agent, and the placeholder's view goes.
    paths = make_state(tmp_path)
    inside = {"agent_id": "a5c0ffee", "agent_type": "coder"}
    spool_at(
        paths,
        (T0 + 2000 * MS, read_tool(1) | inside),
        (T0 + 1000 * MS, read_tool(2) | inside),
        (T0 + 500 * MS, task_start("toolu_t1", "alpha", "coder", "Build the API")),
        (T0 + 3000 * MS, task_done("toolu_t1", "alpha", "coder", "a5c0ffee", "API done")),
    )
    ingest(paths, batch_lines=2)  # the move comes in the pass's second batch
    assert on_disk(paths) == render(paths)
    assert sorted(p.name for p in (paths.sessions / SESSION).iterdir()) == [
        "agent-instructions.jsonl",
        "alpha.jsonl",
    ]
