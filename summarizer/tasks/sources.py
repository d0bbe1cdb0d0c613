"""Task sources: a YAML or JSON task file, standards citations with line spans, scope paths."""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from summarizer.tasks.canon import normalize_multiline, sha256_hex
from summarizer.tasks.errors import TaskValidationError
from summarizer.tasks.models import Citation, Immutable, TaskSnapshot, ValidationBaseline

REQUIREMENT_MAX_CHARS = 140
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def load_task_file(path: Path) -> tuple[dict[str, Any], bytes]:
    """The task file's mapping and raw bytes (.json is JSON; anything else is YAML)."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise TaskValidationError(f"cannot read task file {path}: {e.strerror}") from e
    try:
        text = data.decode("utf-8")
        doc = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise TaskValidationError(f"task file {path} is not valid: {first}") from e
    if not isinstance(doc, dict):
        raise TaskValidationError(f"task file {path} must hold a mapping (title, description, …)")
    return doc, data


def build_immutable(
    doc: dict[str, Any],
    repo: Path,
    *,
    mapped: list[str],
    default_qa: list[str],
) -> tuple[Immutable, list[Path]]:
    """The immutable block from a task document, and the standards files it read.

    `mapped` are the "path#heading" citations the config maps to the task's area and priority;
    the task's own `standards` entries take precedence over them for the same section.
    """
    scope = _mapping(doc.get("scope"))
    title = _text(doc.get("title"))
    if not title:
        raise TaskValidationError("the task has no title: add `title:` to the task file")
    description = normalize_multiline(_text(doc.get("description")))
    if not description.strip():
        raise TaskValidationError(
            "the task has no description: add `description:` to the task file"
        )
    snapshot = TaskSnapshot(
        title=title,
        priority=_text(doc.get("priority")),
        area=_text(doc.get("area")),
        description=description,
        scope_in=_items(scope.get("in")),
        scope_out=_items(scope.get("out")),
        acceptance_criteria=_items(doc.get("acceptance_criteria")),
    )
    wanted: dict[tuple[str, str], str] = {}
    for ref in mapped:
        file, _, section = ref.partition("#")
        wanted[(file, _slug(section))] = ""
    for entry in doc.get("standards") or []:
        if isinstance(entry, str):
            file, _, section = entry.partition("#")
            wanted[(file, _slug(section))] = ""
        elif isinstance(entry, dict):
            key = (_text(entry.get("file")), _slug(_text(entry.get("section"))))
            wanted[key] = _text(entry.get("requirement"))
    citations, files = [], set()
    for (file, section), requirement in sorted(wanted.items()):
        path = _inside(repo, file)
        citations.append(cite(path, file, section, requirement))
        files.add(path)
    qa = _mapping(doc.get("qa"))
    commands = tuple(_text(c) for c in (qa.get("commands") or default_qa) if _text(c))
    immutable = Immutable(
        task_snapshot=snapshot,
        standards_citations=tuple(citations),
        validation_baseline=ValidationBaseline(commands=commands),
        repo_paths=repo_paths(doc, repo),
    )
    return immutable, sorted(files)


def cite(path: Path, file: str, section: str, requirement: str = "") -> Citation:
    """A citation of one heading's section: line span, content SHA, a ≤140-char requirement."""
    try:
        lines = path.read_text(encoding="utf-8").replace("\r\n", "\n").split("\n")
    except OSError as e:
        raise TaskValidationError(f"cannot read standards file {file}: {e.strerror}") from e
    span = section_span(lines, section)
    if span is None:
        raise TaskValidationError(f"{file} has no heading {section!r}; fix the citation")
    start, end = span
    content = "\n".join(lines[start - 1 : end])
    text = requirement or _first_sentence(lines[start:end])
    if len(text) > REQUIREMENT_MAX_CHARS:
        text = text[: REQUIREMENT_MAX_CHARS - 1].rstrip() + "…"
    return Citation(
        file=file,
        section=section,
        requirement=text,
        line_span=f"L{start}-L{end}",
        content_sha=sha256_hex(content.encode())[:16],
    )


def section_span(lines: list[str], slug: str) -> tuple[int, int] | None:
    """1-based inclusive lines of the section under the heading whose slug is `slug`: from the
    heading to the line before the next heading of the same or a higher level."""
    fence = False
    headings: list[tuple[int, int, str]] = []
    for n, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            fence = not fence
        m = None if fence else _HEADING.match(line)
        if m:
            headings.append((n, len(m.group(1)), _slug(m.group(2))))
    for i, (n, level, s) in enumerate(headings):
        if s == slug:
            end = next((m - 1 for m, lv, _ in headings[i + 1 :] if lv <= level), len(lines))
            while end > n and not lines[end - 1].strip():
                end -= 1
            return n, end
    return None


def repo_paths(doc: dict[str, Any], repo: Path) -> tuple[str, ...]:
    """Sorted scope paths: the task's `repo_paths`, plus `scope.in` items naming paths or globs."""
    scope = _mapping(doc.get("scope"))
    found: set[str] = set()
    for item in _items(doc.get("repo_paths")):
        _inside(repo, item)
        found.add(item)
    for item in _items(scope.get("in")):
        if " " in item or item.startswith(("/", "..")):
            continue
        if any(c in item for c in "*?["):
            found.update(
                p.relative_to(repo).as_posix() for p in repo.glob(item) if ".git" not in p.parts
            )
        elif (repo / item).exists():
            found.add(item)
    return tuple(sorted(found))


def _inside(repo: Path, rel: str) -> Path:
    pure = PurePosixPath(rel)
    if not rel or pure.is_absolute() or ".." in pure.parts:
        raise TaskValidationError(f"path {rel!r} must be relative to the repository, without '..'")
    return repo / pure


def _slug(text: str) -> str:
    """GitHub-style heading slug: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"[^\w\s-]", "", text.strip().lower())
    return re.sub(r"\s+", "-", text)


def _first_sentence(body: list[str]) -> str:
    text = " ".join(line.strip() for line in body if line.strip() and not line.startswith("#"))
    m = re.match(r"(.+?[.!?])(\s|$)", text)
    return (m.group(1) if m else text).strip()


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _items(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    values = value if isinstance(value, list) else [value]
    return tuple(
        normalize_multiline(str(v), preserve_formatting=True).rstrip("\n")
        for v in values
        if str(v).strip()
    )
