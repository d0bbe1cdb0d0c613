"""Tests for the view writer's cheap paths: folders opened once, no rebuild when nothing moved.

Each check compares the files with `render(index)` (tests/indexer/views/test_views.py), which writes
every view from the committed entries alone, so a shortcut that loses or repeats a line fails.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from test_views import (
    SESSION,
    base,
    in_agent,
    ingest,
    make_state,
    on_disk,
    render,
    spool,
    task_done,
    task_start,
    tool,
)

from indexer.config import Config, IngestConfig
from indexer.index import store
from indexer.paths import StatePaths
from indexer.views import writer as view_writer
from indexer.writer.catch_up import open_writer

PARALLEL_START = [
    task_start("toolu_ta", "alpha", "coder", "Build the API"),
    task_start("toolu_tb", "beta", "coder", "Build the UI"),
    # Started in the opposite order of their calls: the arrival-order guess links each
    # Claude Code id to the wrong agent until the tool results name them.
    base("SubagentStart", agent_id="cc-b", agent_type="coder"),
    base("SubagentStart", agent_id="cc-a", agent_type="coder"),
    in_agent("cc-b", "coder", "toolu_eb1", "/app/ui.tsx"),
    in_agent("cc-a", "coder", "toolu_ea1", "/app/api.py"),
]
PARALLEL_DONE = [
    task_done("toolu_ta", "alpha", "coder", "cc-a", "API done"),
    task_done("toolu_tb", "beta", "coder", "cc-b", "UI done"),
]


def count_rebuilds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every view the writer rewrites from the index (the real rebuild still runs)."""
    rebuilt: list[str] = []
    real = view_writer.ViewWriter.rebuild

    def rebuild(self: view_writer.ViewWriter, conn: object, session_id: str, view: str) -> None:
        rebuilt.append(view)
        real(self, conn, session_id, view)  # type: ignore[arg-type]

    monkeypatch.setattr(view_writer.ViewWriter, "rebuild", rebuild)
    return rebuilt


def test_a_relink_within_one_batch_appends_instead_of_rebuilding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The wrong links and their corrections arrive in one batch: the entries move before
    # they are stored, so no view holds a line in the wrong file and none is rewritten.
    paths = make_state(tmp_path)
    rebuilt = count_rebuilds(monkeypatch)
    spool(paths, *PARALLEL_START, *PARALLEL_DONE)
    ingest(paths)
    assert rebuilt == []
    assert on_disk(paths) == render(paths)
    assert (paths.sessions / SESSION / "beta.jsonl").read_bytes().count(b"toolu_eb1") == 1


def test_a_relink_of_stored_entries_rebuilds_both_views(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = make_state(tmp_path)
    rebuilt = count_rebuilds(monkeypatch)
    spool(paths, *PARALLEL_START)
    ingest(paths)  # stored and written to the wrong agents' views
    spool(paths, *PARALLEL_DONE)
    ingest(paths)
    assert sorted(rebuilt) == ["alpha", "beta"]  # each once, though both relinks move both
    assert on_disk(paths) == render(paths)


def test_a_relink_of_stored_entries_reads_back_only_the_moved_agents_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The batch that moves stored entries appends the rest of its entries from memory, like
    # any other batch; the rebuilt views already hold their share of it (their last seq skips).
    paths = make_state(tmp_path)
    spool(paths, *PARALLEL_START)
    ingest(paths)
    read_back: list[int] = []
    for name in ("entries_after", "entries_by_id"):
        real = getattr(store, name)

        def read(*args: Any, real: Any = real) -> Any:
            rows = real(*args)
            read_back.append(len(rows))
            return rows

        monkeypatch.setattr(store, name, read)
    orchestrator = [
        tool("PreToolUse", "Read", f"toolu_m{i}", {"file_path": "/a"}) for i in range(5)
    ]
    spool(paths, *PARALLEL_DONE, *orchestrator)
    ingest(paths)
    assert sum(read_back) == len(PARALLEL_DONE)  # of 7 entries, the two agents' results
    assert on_disk(paths) == render(paths)


def test_views_written_once_for_several_batches_follow_a_relink_between_them(
    tmp_path: Path,
) -> None:
    # Views written after several batches (nothing written per batch): a relink in a later
    # batch moved entries of an earlier one after they were stored, so those entries' agents
    # in memory are stale and must be read again from the index.
    paths = make_state(tmp_path)
    # Only alpha's result: beta keeps no entry after the ones moved out of it.
    spool(paths, *PARALLEL_START, PARALLEL_DONE[0])
    writer = open_writer(paths, Config(ingest=IngestConfig(batch_lines=len(PARALLEL_START))))
    try:
        writer.start()
        writer.ingestor.on_batch = None
        writer.pass_once()
    finally:
        writer.close()
    assert on_disk(paths) == render(paths)


def test_many_sessions_and_folders_beyond_the_open_limits(tmp_path: Path) -> None:
    # More sessions than the writer keeps folders open, and more views than it keeps files
    # open, in every order: each line lands once, in its own file, across batches and passes.
    paths = make_state(tmp_path)
    sessions = [f"s{i:03d}" for i in range(view_writer._MAX_OPEN_DIRS * 2 + 3)]
    events = []
    for round_no in range(3):
        for i, sid in enumerate(sessions):
            agent = f"cc-{i % 3}"
            events.append(
                base(
                    "PreToolUse", tool_name="Read", tool_use_id=f"t{round_no}-{sid}", tool_input={}
                )
                | {"session_id": sid, "agent_id": agent, "agent_type": "reader"}
            )
            events.append(
                base("UserPromptSubmit", prompt=f"round {round_no}") | {"session_id": sid}
            )
    assert len({(e["session_id"], e.get("agent_id")) for e in events}) > view_writer._MAX_OPEN_VIEWS
    spool(paths, *events[: len(events) // 2])
    ingest(paths)
    spool(paths, *events[len(events) // 2 :])
    ingest(paths)
    assert on_disk(paths) == render(paths)
    assert len(on_disk(paths)) == len(render(paths)) > view_writer._MAX_OPEN_VIEWS


def test_the_writer_holds_no_more_folders_than_its_limit(tmp_path: Path) -> None:
    paths = make_state(tmp_path)
    spool(
        paths,
        *(
            base("UserPromptSubmit", prompt="hi") | {"session_id": f"s{i:03d}"}
            for i in range(view_writer._MAX_OPEN_DIRS + 10)
        ),
    )
    writer = open_writer(paths, Config())
    try:
        before = len(os.listdir("/proc/self/fd"))
        writer.pass_once()
        held = len(os.listdir("/proc/self/fd")) - before
        assert 0 < held <= view_writer._MAX_OPEN_DIRS + view_writer._MAX_OPEN_VIEWS
        assert len(writer.views._dirs) <= view_writer._MAX_OPEN_DIRS
    finally:
        writer.close()
    assert on_disk(paths) == render(paths)


def test_a_session_folder_replaced_by_a_symlink_is_refused_after_forget(tmp_path: Path) -> None:
    # The writer keeps session folders open between batches; `forget` (called after anything
    # that replaces view files) drops them, and the next open refuses a symlinked folder.
    paths = make_state(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    spool(paths, base("UserPromptSubmit", prompt="first"))
    writer = open_writer(paths, Config())
    try:
        writer.pass_once()
        folder = paths.sessions / SESSION
        for f in folder.iterdir():
            f.unlink()
        folder.rmdir()
        folder.symlink_to(outside, target_is_directory=True)
        writer.views.forget()
        spool(paths, base("UserPromptSubmit", prompt="second"))
        writer.pass_once()
    finally:
        writer.close()
    assert list(outside.iterdir()) == []


def test_views_of_a_fresh_writer_continue_a_folder_it_did_not_create(tmp_path: Path) -> None:
    paths = make_state(tmp_path)
    spool(paths, base("UserPromptSubmit", prompt="first"))
    ingest(paths)
    spool(paths, base("UserPromptSubmit", prompt="second"))
    ingest(paths)  # another writer: opens the existing folder and files, reads their last seq
    assert on_disk(paths) == render(paths)
    assert StatePaths(paths.root).session_dir(SESSION).stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("removed", ["session folder", "sessions folder"])
def test_a_folder_deleted_behind_the_writer_is_made_again(tmp_path: Path, removed: str) -> None:
    # The writer keeps folders open between passes; one deleted meanwhile (by hand) must not
    # stop ingest: it is walked to and created again for the next new view file.
    paths = make_state(tmp_path)
    spool(paths, base("UserPromptSubmit", prompt="first"))
    writer = open_writer(paths, Config())
    try:
        writer.pass_once()
        shutil.rmtree(paths.sessions / SESSION if removed == "session folder" else paths.sessions)
        spool(
            paths,
            in_agent("cc-x", "coder", "toolu_x1", "/app/x.py"),  # a new view in that folder
            base("UserPromptSubmit", prompt="other") | {"session_id": "other-session"},
        )
        writer.pass_once()
    finally:
        writer.close()
    assert b'"toolu_x1"' in (paths.sessions / SESSION / "cc-x.jsonl").read_bytes()
    assert b'"other"' in (paths.sessions / "other-session" / "main.jsonl").read_bytes()
    assert (paths.sessions / "other-session" / "main.jsonl").read_bytes().count(b'"seq"') == 1
