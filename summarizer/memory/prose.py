"""Prose out of recorded text (pure): sentences with their place, pasted material left out."""

from __future__ import annotations

import re
from dataclasses import dataclass

from summarizer.common.text import SCAN_CHARS
from summarizer.common.tokens import sanitize

__all__ = [
    "PLAN_HEAD",
    "Unit",
    "clauses",
    "is_pasted_prompt",
    "plan_parts",
    "units",
]

# Claude Code pastes an approved plan into the prompt after this line; the user's own words,
# when there are any, come after "User feedback on this plan:".
PLAN_HEAD = "Implement the following plan:"
_PLAN_FEEDBACK = re.compile(r"\n\s*User feedback on this plan:\s*")
_PLAN_TAIL = re.compile(r"\n\s*If you need specific details from before exiting plan mode\b")
# Prompts Claude Code writes itself, that hand tool output back, or that cast the agent in a
# role ("You are a …": instructions written for an agent, an orchestrator's or a pasted system
# prompt): none is the user's own words.
_NOT_THE_USERS = re.compile(
    r"^\s*(?:<|\[Request interrupted|Caveat:|This session is being continued from a previous"
    r"|[\w /-]*hook feedback:|[\w /-]*operation feedback:|You are (?:a|an|the|now)\b"
    r"|You are \w+ing\b)",
    re.I,
)
# A line of terminal output, a log, a stack trace or a shell prompt pasted into a prompt.
_OUTPUT_LINE = re.compile(
    r"^\s*(?:==>|\$ |% |>>> |#!|Traceback \(|File \"|at \S+ \(|npm (?:ERR|WARN)|(?:zsh|bash|sh|"
    r"curl|fatal|error|warning|Error|ERROR|WARN|FAIL|FAILED)(?:\[\w+\])?:|[┌└│├╭╰─]|\{\"|\[\{)"
)
_FENCE = re.compile(r"^\s*(```|~~~)")
_QUOTE = re.compile(r"^\s*>")
_TABLE = re.compile(r"^\s*\|")
_HEADING = re.compile(r"^\s*#{1,6}\s+")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s+")
_RULE_LINE = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,}|={3,})\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_CLAUSE = re.compile(r"\s*[;,]\s*(?:(?:pero|but)\s+)?|\s+(?:pero|but)\s+", re.I)
# Words a user writes about themselves or to the agent; a paragraph without any is pasted
# documentation when it is long (see `units`).
_OWN_WORDS = re.compile(
    r"(?i)\b(?:i|i'm|i'd|i've|i'll|me|my|mine|we|we're|we'll|let's|us|our|please|pls"
    r"|yo|mi|mis|nosotros|nuestro|quiero|necesito|dame|hagamos|porfavor)\b"
)
DOC_PARAGRAPH_CHARS = 250
CLAUSE_SPLIT_CHARS = 240


@dataclass(frozen=True)
class Unit:
    """One sentence of prose, with what a reader needs around it."""

    text: str
    heading: bool = False  # a markdown heading
    bullet: bool = False  # an item of a list
    items: tuple[str, ...] = ()  # the list a sentence ending in ":" introduces
    following: str = ""  # the next sentences of the same paragraph


def is_pasted_prompt(text: str) -> bool:
    """Whether a whole prompt is text the user did not write: Claude Code's own messages,
    hook feedback, or pasted output (two or more lines of it)."""
    if _NOT_THE_USERS.match(text):
        return True
    lines = text[:SCAN_CHARS].split("\n")
    return sum(1 for line in lines if _OUTPUT_LINE.match(line)) >= 2


def plan_parts(text: str) -> tuple[str, str] | None:
    """(the plan, the user's feedback on it) of a prompt that pastes an approved plan, else None."""
    stripped = text.lstrip()
    if not stripped.startswith(PLAN_HEAD):
        return None
    body = stripped[len(PLAN_HEAD) :]
    feedback = ""
    if m := _PLAN_FEEDBACK.search(body):
        body, feedback = body[: m.start()], body[m.end() :]
    if m := _PLAN_TAIL.search(body):
        body = body[: m.start()]
    return body, feedback


def units(text: str, *, own_words: bool = False) -> list[Unit]:
    """The prose sentences of `text`, in order.

    Code blocks, quoted lines (`> `), table rows, output lines and horizontal rules are left
    out; lines a terminal wrapped are joined back into their sentence. With `own_words` (a
    user's prompt), a long paragraph with no word of the user's own is pasted documentation
    and left out too.
    """
    blocks = _blocks(sanitize(text[:SCAN_CHARS]).replace("\u2019", "'"))
    out: list[Unit] = []
    for i, (kind, body) in enumerate(blocks):
        if kind == "heading":
            out.append(Unit(body, heading=True, following=_next_prose(blocks, i)))
            continue
        sentences = [s for s in _SENTENCE_END.split(body) if s]
        if (
            own_words
            and kind == "para"
            and len(sentences) >= 3
            and len(body) >= DOC_PARAGRAPH_CHARS
            and not _OWN_WORDS.search(body)
        ):
            continue
        for j, sentence in enumerate(sentences):
            items: tuple[str, ...] = ()
            if j == len(sentences) - 1 and sentence.endswith(":"):
                items = _list_after(blocks, i)
            following = " ".join(sentences[j + 1 :])
            out.append(Unit(sentence, bullet=kind == "bullet", items=items, following=following))
    return out


def clauses(sentence: str) -> list[str]:
    """A run-on sentence's clauses (at commas, semicolons, "but"); a short one whole."""
    if len(sentence) <= CLAUSE_SPLIT_CHARS:
        return [sentence]
    return [c.strip() for c in _CLAUSE.split(sentence) if c.strip()]


# --- blocks ---------------------------------------------------------------------------------


def _blocks(text: str) -> list[tuple[str, str]]:
    """(kind, text) of each heading, list item, paragraph; "gap" marks what was left out."""
    blocks: list[tuple[str, str]] = []
    current: list[str] = []
    kind = "para"
    in_fence = False

    def close(next_kind: str = "para") -> None:
        nonlocal current, kind
        if current:
            blocks.append((kind, _clean(" ".join(current))))
        current, kind = [], next_kind

    for raw in text.split("\n"):
        if _FENCE.match(raw):
            close()
            in_fence = not in_fence
            blocks.append(("gap", ""))
            continue
        line = raw.strip()
        if in_fence or not line or _RULE_LINE.match(raw):
            close()
            if in_fence or line:
                blocks.append(("gap", ""))
            continue
        if _QUOTE.match(raw) or _TABLE.match(raw) or _OUTPUT_LINE.match(raw):
            close()
            blocks.append(("gap", ""))
            continue
        if _HEADING.match(raw):
            close()
            blocks.append(("heading", _clean(_HEADING.sub("", raw))))
            continue
        if m := _BULLET.match(raw):
            close("bullet")
            current.append(raw[m.end() :].strip())
            continue
        if raw.startswith(("    ", "\t")) and kind != "bullet" and not current:
            blocks.append(("gap", ""))  # an indented block: a command or code
            continue
        if current and not _continues(current[-1], line, kind):
            close()
        current.append(line)
    close()
    return [(k, b) for k, b in blocks if k == "gap" or b]


def _continues(previous: str, line: str, kind: str) -> bool:
    """Whether `line` goes on the sentence of the line before (a wrapped line)."""
    if kind == "bullet":
        return True  # an item's continuation lines (bullets and headings start new blocks)
    if previous.endswith((".", "!", "?", ":", ";")):
        return False
    return line[:1].islower() or len(previous) >= 60


def _clean(text: str) -> str:
    return " ".join(text.replace("**", "").replace("`", "").split())


def _list_after(blocks: list[tuple[str, str]], i: int) -> tuple[str, ...]:
    items: list[str] = []
    for kind, body in blocks[i + 1 :]:
        if kind != "bullet":
            break
        items.append(body)
    return tuple(items)


def _next_prose(blocks: list[tuple[str, str]], i: int) -> str:
    for kind, body in blocks[i + 1 :]:
        if kind == "para":
            return body
        if kind == "heading":
            break
    return ""
