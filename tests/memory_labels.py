"""Precision and recall of the memory against hand labels of the corpus transcripts.

The corpus transcripts are imported into a fresh state directory and compacted, exactly as
`ctxd import` and `ctxd compact` do; every constraint and decision the memory then holds
(retired ones too) is matched against tests/data/memory/corpus-labels/labels.toml. Used by
tests/summarizer/memory/test_memory_labels.py (which asserts the thresholds) and by
bench/bench_memory_quality.py (which prints the figures).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers import CORPUS, REPO, import_transcripts

from indexer.config import Config
from indexer.paths import StatePaths
from indexer.queries import history
from summarizer.common.tokens import get_counter
from summarizer.memory.store import compact
from summarizer.resume import writer as resume

LABELS = REPO / "tests" / "data" / "memory" / "corpus-labels" / "labels.toml"
TRANSCRIPTS = CORPUS / "transcripts"
KINDS = ("constraint", "decision")
# A label's source, as the memory names it.
_SOURCES = {"prompt": "user_prompt", "plan": "plan", "stop": "stop"}


@dataclass(frozen=True)
class Label:
    """One hand label: should the memory keep this sentence of that transcript?"""

    file: str
    line: int
    source: str
    kind: str
    take: bool
    text: str
    why: str


@dataclass(frozen=True)
class Item:
    """One constraint or decision the memory holds, with where it was first stated."""

    kind: str
    text: str
    sources: frozenset[str]
    file: str  # relative to corpus/transcripts
    line: int


@dataclass
class Score:
    """Precision and recall of one kind of item."""

    kind: str
    right: list[Item] = field(default_factory=list)  # matches a label to take
    wrong: list[tuple[Item, Label]] = field(default_factory=list)  # matches a label not to take
    unlabelled: list[Item] = field(default_factory=list)  # matches no label: counted wrong
    missed: list[Label] = field(default_factory=list)  # labels to take that nothing matches
    positives: int = 0

    @property
    def precision(self) -> float:
        kept = len(self.right) + len(self.wrong) + len(self.unlabelled)
        return len(self.right) / kept if kept else 1.0

    @property
    def recall(self) -> float:
        return (self.positives - len(self.missed)) / self.positives if self.positives else 1.0


def norm(text: str) -> str:
    """Text compared case-, whitespace- and markdown-insensitively."""
    return " ".join(text.replace("`", "").replace("*", "").lower().split())


def load_labels(path: Path = LABELS) -> list[Label]:
    """The hand labels, in file order."""
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    return [Label(**raw) for raw in doc["label"]]


def corpus_memory(state_dir: Path) -> list[Item]:
    """Import every corpus transcript into `state_dir`, compact, and read the memory back."""
    files = sorted(TRANSCRIPTS.rglob("*.jsonl"))
    import_transcripts(state_dir, files)
    conn = history.connect(state_dir / "index.db")
    try:
        compact(conn)
        return list(_items(conn))
    finally:
        conn.close()


# The notes' sections by the first words of their header line (the first block leads).
SECTIONS = {
    "Open tasks:": "tasks",
    "Files worked on lately": "files",
    "Failures, unresolved first:": "failures",
    "The user's constraints in force:": "constraints",
    "Decisions in force:": "decisions",
    "Subagents still running:": "agents",
    "Last tool calls (UTC):": "calls",
    "Where to pick up": "pickup",
}


@dataclass
class Handback:
    """The notes one corpus session would get back after /compact."""

    session_id: str
    text: str
    tokens: int
    sections: dict[str, int]  # tokens per section
    open_failures: int  # distinct unresolved failures the memory holds for the session
    open_failures_shown: int  # of which the notes name


def corpus_handbacks(root: Path) -> list[Handback]:
    """The notes of every corpus session, each project (a folder of the corpus's transcripts)
    imported into a state directory of its own under `root`, as `ctxd import` in it would."""
    out = []
    for project in sorted(p for p in TRANSCRIPTS.iterdir() if p.is_dir()):
        state_dir = root / project.name / "state"
        import_transcripts(state_dir, sorted(project.rglob("*.jsonl")))
        conn = history.connect(state_dir / "index.db")
        try:
            compact(conn)
        finally:
            conn.close()
        out += _handbacks(state_dir)
    return out


def _handbacks(state_dir: Path) -> list[Handback]:
    config = Config()
    count = get_counter(config.summarizer.encoding).count
    paths = StatePaths(state_dir)
    conn = history.connect(state_dir / "index.db")
    out = []
    try:
        sessions = [str(r[0]) for r in conn.execute("SELECT session_id FROM sessions")]
        for sid in sorted(sessions):
            state = resume.update_session(conn, paths, config, sid, "pre_compact")
            text = (paths.resume / sid / resume.CONTEXT_FILE).read_text(encoding="utf-8")
            commands = [
                str(r[0])[:30]
                for r in conn.execute(
                    "SELECT command FROM mem_failures WHERE session_id=?"
                    " AND resolved_entry_id < last_entry_id",
                    (sid,),
                )
            ]
            shown = sum(1 for c in commands if " ".join(c.split())[:30] in " ".join(text.split()))
            sections = {
                name: sum(count(b) for b in _blocks(text, name)) for name in _section_names()
            }
            out.append(Handback(sid, text, state.context_tokens, sections, len(commands), shown))
    finally:
        conn.close()
    return out


def _section_names() -> list[str]:
    return ["lead", *SECTIONS.values()]


def _blocks(text: str, name: str) -> list[str]:
    blocks = text.split("\n\n")
    if name == "lead":
        return blocks[:1]
    return [b for b in blocks[1:] if SECTIONS.get(_header(b)) == name]


def _header(block: str) -> str:
    first = block.split("\n", 1)[0]
    return next((h for h in SECTIONS if first.startswith(h)), "")


def handback_table(backs: list[Handback]) -> str:
    """Average tokens per hand-back and each section's share of them."""
    n = len(backs) or 1
    total = sum(b.tokens for b in backs) / n
    lines = [f"{len(backs)} hand-backs, {total:.0f} tokens on average (max "
             f"{max((b.tokens for b in backs), default=0)})"]  # fmt: skip
    for name in _section_names():
        avg = sum(b.sections[name] for b in backs) / n
        lines.append(f"  {name:<12} {avg:6.0f} tokens  {avg / total if total else 0:6.1%}")
    open_total = sum(b.open_failures for b in backs)
    shown = sum(b.open_failures_shown for b in backs)
    lines.append(f"unresolved failures named in their session's notes: {shown} of {open_total}")
    return "\n".join(lines)


def _items(conn: Any) -> Iterator[Item]:
    places = {
        -int(file_id): str(Path(path).relative_to(TRANSCRIPTS))
        for file_id, path in conn.execute("SELECT file_id, path FROM transcript_files")
    }
    for kind, sql in (
        ("constraint", "SELECT description, source, entry_id FROM mem_constraints"),
        ("decision", "SELECT decision, sources, entry_id FROM mem_decisions"),
    ):
        for text, sources, entry_id in conn.execute(sql):
            found = conn.execute(
                "SELECT file_id, line_no FROM entries WHERE id=?", (entry_id,)
            ).fetchone()
            file, line = (places.get(found[0], "?"), found[1]) if found else ("?", 0)
            yield Item(kind, text, frozenset(sources.split(",")), file, line)


def matches(item: Item, label: Label) -> bool:
    """Whether a remembered item is the sentence a label is about."""
    return (
        item.kind == label.kind
        and item.file == label.file
        and _SOURCES[label.source] in item.sources
        and norm(label.text) in norm(item.text)
    )


def score(items: list[Item], labels: list[Label]) -> dict[str, Score]:
    """Each kind's score: an item matching a label to take is right; any other item is wrong."""
    scores = {kind: Score(kind) for kind in KINDS}
    for item in items:
        found = [label for label in labels if matches(item, label)]
        s = scores[item.kind]
        if any(label.take for label in found):
            s.right.append(item)
        elif found:
            s.wrong.append((item, found[0]))
        else:
            s.unlabelled.append(item)
    for label in labels:
        if label.take:
            scores[label.kind].positives += 1
            if not any(matches(item, label) for item in items):
                scores[label.kind].missed.append(label)
    return scores


def table(scores: dict[str, Score]) -> str:
    """The figures and every mistake, as text."""
    out = [f"{'kind':<11} {'kept':>4} {'right':>5} {'wrong':>5} {'unlabelled':>10} "
           f"{'precision':>9} {'labelled':>8} {'missed':>6} {'recall':>6}"]  # fmt: skip
    for s in scores.values():
        kept = len(s.right) + len(s.wrong) + len(s.unlabelled)
        out.append(
            f"{s.kind:<11} {kept:>4} {len(s.right):>5} {len(s.wrong):>5} {len(s.unlabelled):>10} "
            f"{s.precision:>9.1%} {s.positives:>8} {len(s.missed):>6} {s.recall:>6.1%}"
        )
    for s in scores.values():
        out += [f"  wrong {s.kind}: {i.text[:110]!r} ({lab.why})" for i, lab in s.wrong]
        out += [
            f"  unlabelled {s.kind}: {i.file}:{i.line} [{','.join(sorted(i.sources))}] "
            f"{i.text[:110]!r}"
            for i in s.unlabelled
        ]
        out += [f"  missed {s.kind}: {lab.file}:{lab.line} {lab.text!r}" for lab in s.missed]
    return "\n".join(out)


def label_is_in_its_line(label: Label) -> bool:
    """Whether the labelled snippet is in the text of the transcript line the label names."""
    lines = (TRANSCRIPTS / label.file).read_text(encoding="utf-8").split("\n")
    if not 1 <= label.line <= len(lines):
        return False
    record = json.loads(lines[label.line - 1])
    return any(norm(label.text) in norm(s) for s in _strings(record))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)

