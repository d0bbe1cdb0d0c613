"""`ctxd import`: corpus transcripts into the index, stored once with hooks, incremental."""

from __future__ import annotations

import json
import os
import sqlite3
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest
from helpers import CORPUS, import_transcripts

from indexer.paths import StatePaths
from indexer.transcripts.paths import project_dir, project_folder_name
from indexer.writer.catch_up import catch_up
from indexer.writer.importer import ImportStats

TRANSCRIPTS = CORPUS / "transcripts"
CHICKEN = "6e6cddcb-4e40-4782-ab78-81a62ee507e6"
CHICKEN_TRANSCRIPT = TRANSCRIPTS / "imjoshnewton__chicken-tracker-t3" / CHICKEN / "chat.jsonl"
PRAGMA = "SantiagoCoronado__pragma-web-design-test"
# Transcripts whose session the corpus's hook logs also captured, and what both sources hold.
OVERLAPS = [
    (f"{PRAGMA}/chat.jsonl", ("PostToolUse", "tool_result")),
    (f"{PRAGMA}/chat.jsonl", ("Stop", "stop")),
    (
        f"{PRAGMA}/d223a2bf-3f74-473c-b5b9-01877a336c21_pre_compact_manual_20260403_105002.jsonl",
        ("UserPromptSubmit", "prompt"),
    ),
    (f"imjoshnewton__chicken-tracker-t3/{CHICKEN}/chat.jsonl", ("UserPromptSubmit", "prompt")),
    (f"imjoshnewton__chicken-tracker-t3/{CHICKEN}/chat.jsonl", ("SubagentStop", "subagent_stop")),
]

pytestmark = pytest.mark.skipif(not TRANSCRIPTS.is_dir(), reason=f"no corpus at {CORPUS}")


def _corpus_files() -> list[Path]:
    return sorted(TRANSCRIPTS.rglob("*.jsonl")) if TRANSCRIPTS.is_dir() else []


def _import(state: Path, files: list[Path]) -> ImportStats:
    stats: ImportStats = import_transcripts(state, files)
    return stats


def _db(state: Path) -> sqlite3.Connection:
    return sqlite3.connect(state / "index.db")


def _kinds(state: Path) -> Counter[tuple[str, str]]:
    with _db(state) as conn:
        rows = conn.execute("SELECT hook_event, event, count(*) FROM entries GROUP BY 1, 2")
        return Counter({(h, e): n for h, e, n in rows})


def _expected(path: Path) -> Counter[str]:
    """What a transcript should give, counted independently with json."""
    calls: dict[str, str] = {}
    want: Counter[str] = Counter()
    answered = False  # an assistant text since the last end of turn
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        content = (rec.get("message") or {}).get("content")
        if rec.get("subtype") in ("stop_hook_summary", "turn_duration"):
            want["Stop"] += answered
            answered = False
        if rec.get("type") == "assistant" and isinstance(content, list):
            for b in content:
                answered = answered or (b.get("type") == "text" and not rec.get("isSidechain"))
                if b.get("type") == "tool_use":
                    calls[b["id"]] = b["name"]
                    want["PreToolUse"] += b["name"] in ("Agent", "Task")
        if rec.get("type") == "user" and isinstance(content, list):
            results = [b for b in content if b.get("type") == "tool_result"]
            for b in results:
                name = calls.pop(b["tool_use_id"], None)
                if name:
                    want["PostToolUseFailure" if b.get("is_error") else "PostToolUse"] += 1
                agent = rec.get("toolUseResult")
                if (
                    name in ("Agent", "Task")
                    and not b.get("is_error")
                    and len(results) == 1
                    and isinstance(agent, dict)
                    and agent.get("agentId")
                    and agent.get("status", "completed") == "completed"
                ):
                    want["SubagentStart"] += 1
                    want["SubagentStop"] += 1
        if rec.get("type") == "system" and rec.get("subtype") == "compact_boundary":
            want["PreCompact"] += 1
        want["PostCompact"] += bool(rec.get("isCompactSummary"))
    return +want


@pytest.mark.parametrize("path", _corpus_files(), ids=lambda p: str(p.relative_to(TRANSCRIPTS)))
def test_every_corpus_transcript_imports_its_tool_events(tmp_path: Path, path: Path) -> None:
    stats = _import(tmp_path / ".ctxd", [path])
    assert stats.quarantined == 0
    got = Counter()
    for (hook, _), n in _kinds(tmp_path / ".ctxd").items():
        got[hook] += n
    prompts = got.pop("UserPromptSubmit", 0)
    assert got == _expected(path)
    with _db(tmp_path / ".ctxd") as conn:
        sessions = {r[0] for r in conn.execute("SELECT session_id FROM sessions")}
        texts = [r[0] for r in conn.execute("SELECT text FROM entries WHERE event='prompt'")]
    assert len(texts) == prompts
    assert all(t.strip() and not t.startswith("<command-") for t in texts)
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert sessions <= {r.get("sessionId") for r in records}


def _copy_corpus(dest: Path, age_s: float) -> list[Path]:
    """The corpus transcripts copied under `dest`, last written `age_s` seconds ago.

    A fresh checkout gives every file the time of the checkout, so the age is set here rather
    than taken from wherever the corpus lies (the corpus itself is never touched).
    """
    stamp = datetime.now().timestamp() - age_s
    copies = []
    for path in _corpus_files():
        copy = dest / path.relative_to(TRANSCRIPTS)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(path.read_bytes())
        os.utime(copy, (stamp, stamp))
        copies.append(copy)
    return copies


def test_the_whole_corpus_imports_once_and_a_rerun_adds_nothing(tmp_path: Path) -> None:
    files = _copy_corpus(tmp_path / "transcripts", age_s=3600)
    first = _import(tmp_path / ".ctxd", files)
    assert first.entries > 1000 and first.quarantined == 0
    before = _kinds(tmp_path / ".ctxd")
    again = _import(tmp_path / ".ctxd", files)
    assert again.entries == 0
    assert _kinds(tmp_path / ".ctxd") == before
    # In finished sessions only files that end with a call still waiting for its result are
    # read again.
    assert again.changed <= 2 and again.lines < 100


def test_a_rerun_of_files_written_just_now_adds_nothing_either(tmp_path: Path) -> None:
    # Files written in the last minutes may still get their turn's end, so their last text is
    # read again: more files change, but nothing is stored twice.
    files = _copy_corpus(tmp_path / "transcripts", age_s=0)
    first = _import(tmp_path / ".ctxd", files)
    before = _kinds(tmp_path / ".ctxd")
    again = _import(tmp_path / ".ctxd", files)
    assert again.entries == 0 and again.quarantined == 0
    assert _kinds(tmp_path / ".ctxd") == before
    assert again.lines < first.lines // 10


# --- stored once, whichever source comes first ----------------------------------------------


def _ts_ns(stamp: str) -> int:
    return int(datetime.fromisoformat(stamp).timestamp() * 1000) * 1_000_000


def _hook_spool_lines(transcript: Path) -> list[bytes]:
    """The corpus's hook payloads of the transcript's session, as the hook spools them.

    The loggers kept no times, so each event gets the time Claude Code gave its record in the
    transcript (a prompt: its user line, plus the ~0.3 s before the hook fires; a Stop: the
    line Claude Code writes after the Stop hooks ran, minus 0.2 s), as a live hook's clock would.
    """
    times: dict[str, int] = {}
    prompts: dict[str, int] = {}
    stops: dict[str, int] = {}
    last_text = ""
    start = 0
    session = ""
    for line in transcript.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        session = session or rec.get("sessionId", "")
        if not rec.get("timestamp"):
            continue
        start = start or _ts_ns(rec["timestamp"])
        content = (rec.get("message") or {}).get("content")
        if rec.get("type") == "user" and isinstance(content, str):
            prompts.setdefault(content, _ts_ns(rec["timestamp"]) + 300_000_000)
        if rec.get("subtype") == "stop_hook_summary":
            stops.setdefault(last_text, _ts_ns(rec["timestamp"]) - 200_000_000)
        for b in content if isinstance(content, list) else []:
            if isinstance(b, dict) and b.get("tool_use_id"):
                times[b["tool_use_id"]] = _ts_ns(rec["timestamp"])
            if rec.get("type") == "assistant" and isinstance(b, dict) and b.get("type") == "text":
                last_text = b["text"]
    out = []
    pid = 4000
    hooks = CORPUS / "hooks" / transcript.relative_to(TRANSCRIPTS).parts[0]
    for f in sorted(hooks.rglob("*.jsonl")):
        if f.name == "agent_task_complete.jsonl":
            continue  # a second logger's copy of the SubagentStop events (see PROVENANCE.md)
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines()):
            payload = json.loads(line)
            if not isinstance(payload, dict) or payload.get("session_id") != session:
                continue
            ts = (
                prompts.get(payload.get("prompt", ""))
                or stops.get(payload.get("last_assistant_message", "") or "-")
                or times.get(payload.get("tool_use_id", ""), start + n * 1000)
            )
            pid += 1
            event = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
            out.append(f'{{"ctxd":1,"ts_ns":{ts},"pid":{pid},"event":{event}}}'.encode())
    return out


def _spool_hooks(state: Path, transcript: Path) -> None:
    paths = StatePaths(state)
    paths.ensure()
    lines = _hook_spool_lines(transcript)
    (paths.spool / "20260205T20.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    result = catch_up(paths)
    assert result.stats.quarantined == 0


@pytest.mark.parametrize(
    ("name", "shared"), OVERLAPS, ids=[f"{o[0].split('/')[-1][:8]}-{o[1][1]}" for o in OVERLAPS]
)
def test_hooks_then_import_and_import_then_hooks_store_each_event_once(
    tmp_path: Path, name: str, shared: tuple[str, str]
) -> None:
    transcript = TRANSCRIPTS / name
    hooks_first, import_first = tmp_path / "a" / ".ctxd", tmp_path / "b" / ".ctxd"
    _spool_hooks(hooks_first, transcript)
    hooks_only = _kinds(hooks_first)
    _import(hooks_first, [transcript])
    _import(import_first, [transcript])
    imported_only = _kinds(import_first)
    _spool_hooks(import_first, transcript)

    assert _kinds(hooks_first) == _kinds(import_first)
    for state in (hooks_first, import_first):
        with _db(state) as conn:
            tools = conn.execute(
                "SELECT count(*) FROM entries WHERE tool_use_id<>''"
                " GROUP BY tool_use_id, hook_event HAVING count(*) > 1"
            ).fetchall()
            prompts = [r[0] for r in conn.execute("SELECT text FROM entries WHERE event='prompt'")]
        assert tools == []
        assert len(prompts) == len(set(prompts)), "a prompt from both sources is stored once"
    # The overlap is real: both sources hold some of the same events of this kind.
    assert hooks_only[shared] > 0 and imported_only[shared] > 0
    assert _kinds(hooks_first)[shared] < hooks_only[shared] + imported_only[shared]


# --- incremental: new lines, cut lines, bad lines, replaced files -----------------------------


def _rows(state: Path) -> list[tuple[object, ...]]:
    with _db(state) as conn:
        return conn.execute(
            "SELECT ts_ns, hook_event, event, tool_use_id, tool_name, description, files, text,"
            " error, agent_id FROM entries ORDER BY ts_ns"
        ).fetchall()


def test_appended_lines_and_a_line_cut_in_the_middle_are_imported_later(tmp_path: Path) -> None:
    data = CHICKEN_TRANSCRIPT.read_bytes()
    whole = tmp_path / "whole" / ".ctxd"
    _import(whole, [CHICKEN_TRANSCRIPT])
    part = tmp_path / "session.jsonl"
    state = tmp_path / "parts" / ".ctxd"
    # Cut mid-line three times, once between a tool call's line and its result's line, and
    # once between a turn's last text and the line that ends the turn.
    call = data.index(b'"type":"tool_use"', len(data) // 3)
    between = data.index(b"\n", call) + 1
    turn_end = data.rindex(b"\n", 0, data.index(b"stop_hook_summary", len(data) // 2)) + 1
    cuts = [len(data) // 5, between, len(data) // 2 + 17, turn_end, len(data) - 3, len(data)]
    written = 0
    for cut in cuts:
        with open(part, "ab") as f:
            f.write(data[written:cut])
        written = cut
        stats = _import(state, [part])
        assert stats.quarantined == 0
    assert _rows(state) == _rows(whole)
    # Written to just now, the file may still get its last turn's end: the turn's last text
    # is read again, then once more when the session is idle; after that nothing new means
    # nothing read.
    assert 0 < _import(state, [part]).lines < 100
    os.utime(part, (1_700_000_000, 1_700_000_000))
    assert 0 < _import(state, [part]).lines < 100
    assert _import(state, [part]).lines == 0
    assert _rows(state) == _rows(whole)


def test_bad_lines_are_quarantined_with_file_and_line(tmp_path: Path) -> None:
    lines = CHICKEN_TRANSCRIPT.read_bytes().splitlines(keepends=True)[:60]
    bad = [
        b"{not json\n",
        b'["a list"]\n',
        b'{"type":"user","timestamp":"yesterday","sessionId":"s","message":{"content":"hi"}}\n',
    ]
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(lines[:10] + bad + lines[10:]))
    state = tmp_path / ".ctxd"
    stats = _import(state, [path])
    assert stats.quarantined == 3
    with _db(state) as conn:
        rows = conn.execute(
            "SELECT name, line_no, error FROM quarantine ORDER BY line_no"
        ).fetchall()
    assert [(r[0], r[1]) for r in rows] == [(str(path), 11), (str(path), 12), (str(path), 13)]
    assert "timestamp" in rows[2][2]
    clean = tmp_path / "clean"
    (clean / "t.jsonl").parent.mkdir()
    (clean / "t.jsonl").write_bytes(b"".join(lines))
    _import(clean / ".ctxd", [clean / "t.jsonl"])
    assert len(_rows(state)) == len(_rows(clean / ".ctxd")) > 0


def test_a_lone_surrogate_escape_is_repaired_not_quarantined(tmp_path: Path) -> None:
    line = (
        '{"type":"user","uuid":"u1","sessionId":"s-win","timestamp":"2026-04-20T10:00:00.000Z",'
        '"cwd":"C:\\\\Users\\\\me\\\\game","message":{"role":"user","content":"fix \\ud83d it"}}\n'
    )
    path = tmp_path / "t.jsonl"
    path.write_text(line, encoding="utf-8")
    stats = _import(tmp_path / ".ctxd", [path])
    assert stats.quarantined == 0
    with _db(tmp_path / ".ctxd") as conn:
        assert conn.execute("SELECT text, cwd FROM entries").fetchall() == [
            ("fix \ufffd it", "C:\\Users\\me\\game")
        ]


def test_a_replaced_transcript_is_read_again_from_the_start(tmp_path: Path) -> None:
    lines = CHICKEN_TRANSCRIPT.read_bytes().splitlines(keepends=True)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(lines[:200]))
    state = tmp_path / ".ctxd"
    _import(state, [path])
    first = len(_rows(state))
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(b"".join(lines[200:450]))
    os.replace(replacement, path)  # same path, other file, other head
    stats = _import(state, [path])
    assert stats.entries > 0
    assert len(_rows(state)) > first


@pytest.mark.parametrize(
    ("project", "folder"),
    [
        ("/home/u/my.app", "-home-u-my-app"),
        ("/Users/me/dev_x/a b", "-Users-me-dev-x-a-b"),
        ("C:\\Users\\me\\game", "C--Users-me-game"),
        # One dash per UTF-16 code unit, as JavaScript counts: an emoji is two (checked against
        # the real client in tests/e2e/test_real_client_import.py).
        ("/h/\U0001f680 app", "-h----app"),
        ("/h/日本-é", "-h-----"),
    ],
)
def test_project_folder_names_follow_claude_code(project: str, folder: str) -> None:
    assert project_folder_name(project) == folder


def test_a_long_project_name_ends_with_claude_codes_hash_of_the_path() -> None:
    # The hash is the one the real client wrote for this path (tests/e2e/test_real_client_import.py
    # checks the rule against the client itself).
    project = "/tmp/x/lp/w/" + "a" * 120 + "/" + "b\U0001f680" * 30 + "é" * 20 + "x"
    name = project_folder_name(project)
    assert len(name) == 207 and name.endswith("-b--b--b-nbl0sy")


@pytest.mark.parametrize(
    ("folders", "expected"),
    [
        (["exact", "other-hash"], "exact"),  # the computed name wins
        (["other-hash"], "other-hash"),  # one folder with the same cut name: another hash rule
        (["other-hash", "third-hash"], "exact"),  # two projects share the cut: take neither
    ],
)
def test_a_long_project_folder_is_found_by_its_hash_else_by_its_only_namesake(
    tmp_path: Path, folders: list[str], expected: str
) -> None:
    project = "/srv/" + "deep/" * 50 + "app"
    exact = project_folder_name(project)
    names = {"exact": exact, "other-hash": exact[:201] + "zzz", "third-hash": exact[:201] + "yyy"}
    projects = tmp_path / ".claude" / "projects"
    for folder in folders:
        (projects / names[folder]).mkdir(parents=True)
    env = {"HOME": str(tmp_path), "CLAUDE_PROJECT_DIR": project}
    assert project_dir(env, "/") == projects / names[expected]


@pytest.mark.parametrize("batch_bytes", [2 * 1024 * 1024, 4096])
def test_an_oversize_line_is_quarantined_and_the_rest_imported(
    tmp_path: Path, batch_bytes: int
) -> None:
    # With a large read chunk the long line is read whole; with a small one it never fits.
    state = tmp_path / ".ctxd"
    state.mkdir(mode=0o700)
    (state / "config.toml").write_text(
        f"[ingest]\nmax_line_bytes = 4096\nbatch_bytes = {batch_bytes}\n", encoding="utf-8"
    )
    lines = CHICKEN_TRANSCRIPT.read_bytes().splitlines(keepends=True)
    small = [line for line in lines if len(line) < 3000][:80]
    big = (
        json.dumps(
            {
                "type": "user",
                "uuid": "big",
                "sessionId": CHICKEN,
                "timestamp": "2026-02-05T20:30:00.000Z",
                "message": {"role": "user", "content": "x" * 10_000},
            }
        ).encode()
        + b"\n"
    )
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join([*small[:40], big, *small[40:]]))
    stats = _import(state, [path])
    with _db(state) as conn:
        rows = conn.execute("SELECT name, line_no, error FROM quarantine").fetchall()
    assert [(r[0], r[1]) for r in rows] == [(str(path), 41)]
    assert "max_line_bytes" in rows[0][2]
    clean = tmp_path / "clean.jsonl"
    clean.write_bytes(b"".join(small))
    _import(tmp_path / "c" / ".ctxd", [clean])
    assert len(_rows(state)) == len(_rows(tmp_path / "c" / ".ctxd")) > 0
    assert stats.quarantined == 1


def test_an_odd_shape_is_skipped_in_a_skipped_type_and_quarantined_in_a_read_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        b'{"type":"progress","timestamp":5,"isMeta":"no"}\n'
        b'{"type":"user","timestamp":5,"sessionId":"s1","message":{"content":"hi"}}\n'
    )
    stats = _import(tmp_path / ".ctxd", [path])
    assert stats.quarantined == 1
    with _db(tmp_path / ".ctxd") as conn:
        assert [r[0] for r in conn.execute("SELECT line_no FROM quarantine")] == [2]


def _compaction_transcript(path: Path, session: str) -> None:
    base = {"sessionId": session, "cwd": "/p", "isSidechain": False, "userType": "external"}
    records = []
    for n, stamp in enumerate(("2026-04-02T12:04:50.623Z", "2026-04-02T12:40:10.000Z")):
        records.append(
            {
                **base,
                "type": "system",
                "subtype": "compact_boundary",
                "uuid": f"cb{n}",
                "timestamp": stamp,
                "compactMetadata": {"trigger": "manual", "preTokens": 150000},
            }
        )
        records.append(
            {
                **base,
                "type": "user",
                "uuid": f"cs{n}",
                "isCompactSummary": True,
                "timestamp": stamp,
                "message": {"role": "user", "content": f"This session is being continued… {n}"},
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _spool_compaction_hooks(state: Path, session: str) -> None:
    """The hooks of the first compaction only: PreCompact a minute before the boundary is
    written (the summary takes that long), PostCompact just after."""
    paths = StatePaths(state)
    paths.ensure()
    boundary = _ts_ns("2026-04-02T12:04:50.623Z")
    lines = []
    for pid, (event, ts, extra) in enumerate(
        [
            ("PreCompact", boundary - 60 * 10**9, {"trigger": "manual"}),
            ("PostCompact", boundary + 20 * 10**6, {"trigger": "manual", "compact_summary": "s"}),
        ],
        start=7000,
    ):
        payload = {"session_id": session, "cwd": "/p", "hook_event_name": event, **extra}
        lines.append(f'{{"ctxd":1,"ts_ns":{ts},"pid":{pid},"event":{json.dumps(payload)}}}')
    (paths.spool / "20260402T12.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    catch_up(paths)


def test_a_compaction_from_hooks_and_transcript_is_stored_once_either_way(tmp_path: Path) -> None:
    session = "f32d2764-18ca-4c36-8058-6f26e915740b"
    transcript = tmp_path / "t.jsonl"
    _compaction_transcript(transcript, session)
    hooks_first, import_first = tmp_path / "a" / ".ctxd", tmp_path / "b" / ".ctxd"
    _spool_compaction_hooks(hooks_first, session)
    _import(hooks_first, [transcript])
    _import(import_first, [transcript])
    _spool_compaction_hooks(import_first, session)
    for state in (hooks_first, import_first):
        # Two compactions: the first from both sources (stored once), the second only in
        # the transcript, 35 minutes later.
        assert _kinds(state) == Counter(
            {("PreCompact", "pre_compact"): 2, ("PostCompact", "post_compact"): 2}
        )


def test_leaving_out_unread_tool_responses_changes_no_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The import leaves out the tool responses no entry uses (normalize.reads_response);
    # with every response kept, as a hook sends it, the index must come out the same.
    import indexer.transcripts.records as records

    trimmed, full = tmp_path / "trimmed" / ".ctxd", tmp_path / "full" / ".ctxd"
    _import(trimmed, _corpus_files())
    monkeypatch.setattr(records, "reads_response", lambda _tool: True)
    _import(full, _corpus_files())

    def everything(state: Path) -> list[tuple[object, ...]]:
        with _db(state) as conn:
            return conn.execute(
                "SELECT ts_ns, pid, session_id, hook_event, event, agent_id, agent_type,"
                " cc_agent_id, tool_name, tool_use_id, description, instruction, output_summary,"
                " error, files, text, cwd, detail FROM entries ORDER BY ts_ns, pid"
            ).fetchall()

    assert everything(trimmed) == everything(full)
    assert len(everything(full)) > 1000


def test_a_file_name_that_is_not_utf8_is_skipped_with_a_warning_and_the_rest_imported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lines = CHICKEN_TRANSCRIPT.read_bytes().splitlines(keepends=True)[:60]
    good = tmp_path / "good.jsonl"
    good.write_bytes(b"".join(lines))
    odd = Path(os.fsdecode(os.fsencode(tmp_path) + b"/odd-\xff.jsonl"))
    odd.write_bytes(b"".join(lines))
    with caplog.at_level("WARNING", logger="ctxd.import"):
        stats = _import(tmp_path / ".ctxd", [odd, good])
    assert stats.files == 2 and stats.changed == 1
    assert len(_rows(tmp_path / ".ctxd")) > 0
    assert any("not valid UTF-8" in r.getMessage() for r in caplog.records)
