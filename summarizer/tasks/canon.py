"""Deterministic forms: canonical JSON, text and diff normalization, hashes, TASK-ID checks."""

from __future__ import annotations

import hashlib
import json
import re
from textwrap import fill
from typing import Any

from summarizer.tasks.errors import InvalidTaskIdError

# Stamped in context.manifest: a change to either function changes these, so two machines
# never silently produce different snapshots from the same input.
SERIALIZER = "json:sort_keys,utf-8,indent=2,trailing-newline/1"
NORMALIZER = "normalize_multiline/1.0.0"

# TASK-IDs name a directory: letters, digits, '.', '_' and '-', not starting with '.',
# so "..", hidden names and separators can never pass.
_TASK_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_ROLE_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_BULLET = re.compile(r"^\s*[-*\d]+[.)]?\s")


def check_task_id(task_id: str) -> str:
    """Return `task_id` or raise InvalidTaskIdError."""
    if _TASK_ID_RE.fullmatch(task_id) is None:
        raise InvalidTaskIdError(
            f"invalid task id {task_id[:80]!r}: use letters, digits, '.', '_' or '-' "
            "(1-64 characters, not starting with '.'), e.g. TASK-0824"
        )
    return task_id


def is_valid_role(role: str) -> bool:
    """True if `role` can name an export file (context-<role>.json)."""
    return _ROLE_RE.fullmatch(role) is not None


def canonical_json(value: Any) -> bytes:
    """The one serializer of every task file: sorted keys, UTF-8, trailing newline."""
    return (json.dumps(value, sort_keys=True, ensure_ascii=False, indent=2) + "\n").encode()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def normalize_multiline(text: str, preserve_formatting: bool = False) -> str:
    """Deterministic text cleaning of task fields (version NORMALIZER).

    LF line endings; lines starting with '#' (YAML comments) and blank lines dropped; unless
    preserve_formatting, paragraphs that are not bullet lists wrapped at 120 characters on word
    boundaries; one trailing newline.
    """
    normalized = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = [line for line in normalized.split("\n") if not line.strip().startswith("#")]
    lines = [line for line in lines if line.strip()]
    normalized = "\n".join(lines)
    if not preserve_formatting:
        # Blank lines are gone, so the whole text is one paragraph: as the algorithm specifies.
        paragraphs = normalized.split("\n\n")
        wrapped = [
            p
            if _BULLET.match(p)
            else fill(p, width=120, break_long_words=False, break_on_hyphens=False)
            for p in paragraphs
        ]
        normalized = "\n\n".join(wrapped)
    return normalized.rstrip("\n") + "\n"


def normalize_diff_for_hashing(diff: str) -> str:
    """A diff in LF-only form with a trailing newline: the same SHA on every platform."""
    normalized = diff.replace("\r\n", "\n").replace("\r", "\n")
    if normalized and not normalized.endswith("\n"):
        normalized += "\n"
    return normalized


def diff_sha(diff: bytes) -> str:
    """SHA-256 of a diff after normalization (the stored diff keeps its own bytes)."""
    text = normalize_diff_for_hashing(diff.decode("utf-8", "surrogateescape"))
    return sha256_hex(text.encode("utf-8", "surrogateescape"))


def content_sha(data: bytes) -> str:
    """SHA-256 of a file's content with CRLF folded to LF, so CRLF and LF checkouts agree."""
    return sha256_hex(data.replace(b"\r\n", b"\n"))


def scope_hash(repo_paths: list[str]) -> str:
    """16 hex digits of SHA-256 over the sorted paths, one per line (paths, not contents)."""
    return sha256_hex(("\n".join(sorted(repo_paths)) + "\n").encode())[:16]
