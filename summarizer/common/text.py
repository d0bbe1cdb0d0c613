"""Pure text helpers: sentences, stable keys, masking, rule terms, failure signatures."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from indexer import AGENT_TOOLS
from summarizer.common.tokens import sanitize

ITEM_CHARS = 300  # longest decision, constraint or failure text kept
SCAN_CHARS = 8000  # how much of a long text is scanned (a pasted log is not where rules are)

_FENCE = re.compile(r"```.*?(?:```|$)", re.S)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_BULLET = re.compile(r"^\s*(?:[-*+>#]+|\d+[.)])\s*")
# A choice stated outright. In agent output, plans ("we will", "we're going to") and
# "X instead of Y" count too, the latter only with a verb of choice: "renders A instead of B"
# describes behaviour, "use A instead of B" decides.
STRONG_DECISION_RE = re.compile(
    r"(?i)\bdecision\s*:|\b(?:decided|chose|chosen|opted (?:for|to)|going with|go with"
    r"|settled on)\b"
)
DECISION_RE = re.compile(
    r"(?i)\bdecision\s*:|\b(?:decided|we will|we'll|we are going to|we're going to|chose|chosen"
    r"|opted (?:for|to)|going with|go with|settled on)\b"
    r"|\b(?:use|uses|using|used|switch(?:ed)? to|prefer|replaced?|adopt(?:ed)?|keep|stream)\b"
    r".*\binstead of\b"
)
# A rule: an imperative at the start ("Never …", "Don't …", "Only …", "Make sure …"), a modal
# anywhere ("must", "should not", "never", "always"), or "don't" + an action verb. A bare
# "don't" ("I don't see the change") is not a rule.
RULE_RE = re.compile(
    r"(?i)^(?:please\s+)?(?:never|always|don't|do not|dont|avoid|only|make sure)\b"
    r"|\b(?:must(?: not)?|mustn't|should not|shouldn't|never|always)\b"
    r"|\b(?:don't|do not|dont)\s+(?:ever\s+)?(?:use|touch|edit|change|modify|commit|push|run"
    r"|add|create|delete|remove|install|call|import|write|rename|break|skip|disable|store|log"
    r"|expose|hardcode|return|stop|merge|deploy|upgrade|downgrade|mock)\b"
    r"|\bonly (?:use|ship|support|allow|edit|touch|change|run|commit)\b"
)
NEGATIVE_RE = re.compile(
    r"(?i)\b(?:never|don't|do not|dont|must not|mustn't|should not|shouldn't|avoid)\b"
)
# Phrases that lift an earlier rule ("you can edit src/x.py now"); see `revokes`.
LIFT_RE = re.compile(
    r"(?i)\b(?:you can|you may|feel free to|it'?s (?:ok|okay|fine) to|(?:is|are) (?:now )?allowed"
    r"|you're allowed|no longer|don't need to|do not need to|doesn't need to|go ahead and"
    r"|ignore (?:the|my|that) (?:rule|constraint|instruction)"
    r"|forget (?:the|my|that) (?:rule|constraint|instruction))\b"
)
_HASH = re.compile(r"\b(?=[0-9a-fA-F-]*\d)[0-9a-fA-F]{7,}(?:-[0-9a-fA-F]{4,})*\b")
_PATH = re.compile(
    r"(?:[A-Za-z]:)?[\w.@~+-]*(?:[/\\][\w.@~+-]+)+|\b[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4}\b"
)
_TMP_PATH = re.compile(r"/(?:tmp|var/folders)/[\w./-]+")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_EXIT = re.compile(r"^\s*Exit code (-?\d+)")
# A compiler's "path:line:col: message" counts as much as an "Error:" line.
_STRONG_ERROR = re.compile(
    r"^(?:FAILED|ERROR)\b|^E\s+\S|\b\w*(?:Error|Exception)\b:?|^[\w./-]+:\d+:\d+:\s"
)
_WEAK_ERROR = re.compile(
    r"(?i)\b(?:error|failed|failure|fatal|panic|exception|not found|denied|cannot|can't|unable"
    r"|no such|refused|timed? ?out|invalid)\b"
)
_WORD = re.compile(r"[\w./\\-]+")
# Words that carry no meaning of their own in a rule ("never touch the X" is about touch, x).
_STOP_WORDS = """a an the to of in on for and or with this that these those it its it's is are be
been was were we you i me my our your us they them their there here any all some before after when
if then so as at by from now please just ever also anything things thing can will would should
could not no yes do does did don't dont must mustn't never always only avoid make sure shouldn't
may need needs ok okay fine feel free go ahead allowed longer ignore forget rule rules constraint
instruction more less very really"""
_STOP = frozenset(_STOP_WORDS.split())


def clean(text: str) -> str:
    """Text with lone surrogates repaired and whitespace collapsed."""
    return " ".join(sanitize(text).replace("\u2019", "'").split())


def clip(text: str, limit: int) -> str:
    """`text` cut at a word boundary to at most `limit` characters, marked with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - 1)]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def text_key(text: str) -> str:
    """A stable id for a statement: case, punctuation and a "Decision:" label do not matter."""
    norm = re.sub(r"[\W_]+", " ", text.lower()).strip()
    norm = re.sub(r"^(?:decision|constraint|rule)\s+", "", norm)
    return hashlib.sha1(norm.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def sentences(text: str) -> list[str]:
    """Sentences of prose: code fences dropped, list bullets stripped, one per line or period."""
    text = _FENCE.sub(" ", sanitize(text[:SCAN_CHARS]).replace("\u2019", "'"))
    out = []
    for raw_line in text.split("\n"):
        line = _BULLET.sub("", raw_line).replace("**", "").replace("`", "")
        for part in _SENTENCE_END.split(line):
            sentence = " ".join(part.split())
            if sentence:
                out.append(sentence)
    return out


def mask(text: str) -> str:
    """Error text with hashes, paths and numbers masked, so that recurrences compare equal."""
    text = _HASH.sub("<hash>", text)
    text = _PATH.sub("<path>", text)
    return " ".join(_NUMBER.sub("N", text).split())[:200]


def relpath(path: str, cwd: str) -> str:
    """`path` relative to the project directory when it lies inside it."""
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    return path


def key_terms(text: str) -> list[str]:
    """Significant lower-case words and path-like tokens of a sentence, in order."""
    words = (w.strip(".-").lower() for w in _WORD.findall(text))
    return [w for w in words if len(w) >= 3 and w not in _STOP]


def _is_path(term: str) -> bool:
    return "/" in term or bool(re.fullmatch(r"[\w-]+\.[a-z][a-z0-9]{0,4}", term))


def rule_head(sentence: str) -> tuple[str, ...]:
    """The first two key terms after a sentence's rule word ("never touch X" -> touch, x)."""
    m = RULE_RE.search(sentence)
    rest = sentence[m.end() :] if m else sentence
    return tuple(key_terms(re.split(r"[;:,]", rest, maxsplit=1)[0])[:2])


def rule_object(text: str, head: tuple[str, ...]) -> frozenset[str]:
    """What a rule is about: its file paths if it names any, else its head terms."""
    paths = {t for t in key_terms(text) if _is_path(t)}
    return frozenset(paths or head)


# --- failures -----------------------------------------------------------------------------


def normalize_command(command: str, cwd: str) -> str:
    """A shell command with whitespace collapsed, `cd <project> &&` dropped, hashes masked."""
    command = " ".join(sanitize(command).split())
    if cwd:
        for prefix in (f"cd {cwd} && ", f'cd "{cwd}" && '):
            command = command.removeprefix(prefix)
    # Temporary paths differ on every run; they must not split one failure into many.
    command = _TMP_PATH.sub("<tmp>", command)
    return _HASH.sub("<hash>", command)[:300]


def error_summary(error: str) -> tuple[str, str]:
    """(exit code or "", the most informative line) of a tool error."""
    lines = sanitize(error[:4000]).splitlines()
    code = ""
    if lines and (m := _EXIT.match(lines[0])):
        code = m.group(1)
        lines = lines[1:]
    candidates = [s.strip() for s in lines if re.search(r"[A-Za-z]", s)]
    # A line that ends in a colon introduces the next one ("blocked by hook:" / "- reason").
    candidates = [
        f"{c} {candidates[i + 1]}" if c.endswith(":") and i + 1 < len(candidates) else c
        for i, c in enumerate(candidates)
    ]
    for pattern in (_STRONG_ERROR, _WEAK_ERROR):
        for line in candidates:
            if pattern.search(line):
                return code, clip(" ".join(line.split()), 200)
    if candidates:
        return code, clip(" ".join(candidates[0].split()), 200)
    return code, "interrupted" if error.strip() == "interrupted" else ""


def signature(tool: str, command: str, error_class: str) -> str:
    """The dedupe key of a failure: tool, normalized command, masked error class."""
    raw = f"{tool}\x1f{command}\x1f{error_class}".encode("utf-8", "surrogatepass")
    return hashlib.sha1(raw).hexdigest()[:16]


def command_of(tool: str, tool_input: dict[str, Any], cwd: str, description: str) -> str:
    """What a tool call did, as the normalized command part of a failure signature."""
    if tool == "Bash":
        return normalize_command(str(tool_input.get("command", "")), cwd)
    if tool in AGENT_TOOLS:
        return clean(str(tool_input.get("description", "") or description))[:200]
    for field in ("file_path", "notebook_path", "pattern", "url", "query", "path"):
        value = tool_input.get(field)
        if isinstance(value, str) and value:
            return relpath(clean(value), cwd)[:300]
    return ""


def edit_snippet(tool: str, tool_input: dict[str, Any]) -> str:
    """The first changed line of an edit, to tell what changed ("header = [...]")."""
    new = tool_input.get("new_string")
    edits = tool_input.get("edits")
    if not isinstance(new, str) and isinstance(edits, list) and edits:
        first = edits[0]
        new = first.get("new_string") if isinstance(first, dict) else None
    if isinstance(new, str):
        for raw_line in new.split("\n"):
            line = re.sub(r"\s+#.*$", "", raw_line).strip()
            if line:
                return clip(clean(line), 80)
    return "rewritten" if tool == "Write" else ""


def prevention_text(edits: list[tuple[str, str]], verb: str, rerun: bool = True) -> str:
    """What changed between the last failure and the success, most recent edit first.

    `edits` are (path, snippet) pairs, newest first. `rerun`: the success ran the very call
    that failed (so, without edits in between, the failure may have been flaky).
    """
    seen: dict[str, str] = {}
    for path, snippet in edits:
        if path not in seen:
            seen[path] = snippet
    if not seen:
        if not rerun:
            return verb[:1].upper() + verb[1:]
        return f"Re-running without file edits, {verb} (possibly flaky or environment-related)"
    parts = [f"{p} ({s})" if s and s != "rewritten" else p for p, s in list(seen.items())[:3]]
    more = f" and {len(seen) - 3} more files" if len(seen) > 3 else ""
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return clip(f"After editing {listed}{more} {verb}", ITEM_CHARS)
