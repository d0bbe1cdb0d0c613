"""Failures in words (pure): what a call aimed at, whether it only followed another, one line."""

from __future__ import annotations

import re
from typing import Any

from indexer import AGENT_TOOLS

__all__ = [
    "CASCADE",
    "USER_STOP",
    "cascade_kind",
    "command_head",
    "describe_failure",
    "failure_line",
    "is_check",
    "quoted",
    "resolves",
    "target_of",
]

# A call that failed only because a parallel call failed: folded into that failure.
CASCADE = "cascade"
# A call the user stopped or rejected: the user's choice, not a failure of the call.
USER_STOP = "user_stop"
_CASCADES = ("sibling tool call errored",)
_USER_STOPS = (
    "interrupted",
    "[request interrupted",
    "user rejected tool use",
    "the user doesn't want to proceed",
    "the user doesn't want to take this action",
    "request interrupted by user",
)
_EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
_READ_TOOLS = frozenset({"Read", "NotebookRead"})
_SEARCH_TOOLS = frozenset({"Grep", "Glob", "LS"})
# Programs run through a launcher: the head is what the launcher runs.
_LAUNCHERS = frozenset({"sudo", "time", "env", "npx", "bunx", "pnpx", "exec", "nohup", "command"})
_TWO_WORD_LAUNCHERS = frozenset({"uv run", "poetry run", "pnpm dlx", "pipenv run", "pdm run"})
_TEST_RUNNERS = frozenset(
    {"pytest", "jest", "vitest", "mocha", "rspec", "phpunit", "go test", "cargo test", "npm test",
     "bun test", "pnpm test", "yarn test", "deno test", "tox", "nox", "ctest", "unittest"}
)  # fmt: skip
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WORD = re.compile(r"^[A-Za-z][\w:+-]*$")
# Programs whose first argument is what they act on: a script to run, a path to read or write.
_ON_A_PATH = frozenset(
    {"node", "tsx", "ts-node", "python", "python3", "ruby", "bash", "sh", "zsh", "deno", "php",
     "perl", "cat", "ls", "rm", "mkdir", "cp", "mv", "chmod", "touch", "head", "tail", "stat",
     "tree", "find", "open", "less", "wc"}
)  # fmt: skip
_TOKEN = re.compile(r"""'[^']*'|"(?:\\.|[^"\\])*"|\S+""")
_CHAIN = re.compile(r"\s*(?:&&|\|\||;)\s*")
_PIPE = re.compile(r"\s+\|\s+|\s*\|(?!\|)\s*")
_REDIRECT = re.compile(r"^\d*[<>]|^&>")


# A command that checks the work: a test runner, a build, a linter or a type checker.
_CHECK_PROGRAMS = frozenset(
    {"tsc", "eslint", "ruff", "mypy", "pyright", "flake8", "pylint", "make", "tox", "nox",
     "biome", "prettier", "black", "golangci-lint", "ctest", "phpstan", "rubocop"}
)  # fmt: skip
_CHECK_WORDS = frozenset(
    {"build", "test", "tests", "lint", "check", "typecheck", "type-check", "vet", "clippy",
     "verify", "ci", "compile"}
)  # fmt: skip


def is_check(head: str) -> bool:
    """Whether a command head (see command_head) checks the work: tests, a build, a linter."""
    words = head.split()
    if not words:
        return False
    runner = any(head == r or head.startswith(r + " ") for r in _TEST_RUNNERS)
    return runner or words[0] in _CHECK_PROGRAMS or any(w in _CHECK_WORDS for w in words[1:3])


def cascade_kind(error: str) -> str:
    """CASCADE, USER_STOP or "" for a call's error text."""
    head = " ".join(error.strip().lower().split())[:200]
    if any(head.startswith(c) for c in _CASCADES):
        return CASCADE
    if any(head.startswith(c) or c in head for c in _USER_STOPS):
        return USER_STOP
    return ""


def command_head(command: str) -> str:
    """The program and its subcommand that a shell command runs, with the test nodes of a test
    runner: `cd x && npm install && npx tsx s.ts --id 4` -> `tsx s.ts`, `python -m pytest -q
    tests/a.py::t` -> `pytest tests/a.py::t`, `npm run build 2>&1 | tail` -> `npm run build`."""
    segments = [s for s in _CHAIN.split(command.strip()) if s.strip()]
    segments = [s for s in segments if not s.lstrip().startswith(("cd ", "export ", "source "))]
    if not segments:
        return " ".join(command.split())[:80]
    main = _PIPE.split(segments[-1], maxsplit=1)[0]
    tokens = [t for t in _TOKEN.findall(main) if not _REDIRECT.match(t)]
    while tokens and (_ENV_ASSIGNMENT.match(tokens[0]) or tokens[0] in _LAUNCHERS):
        tokens = tokens[1:]
    if len(tokens) >= 2 and f"{tokens[0]} {tokens[1]}" in _TWO_WORD_LAUNCHERS:
        tokens = tokens[2:]
        while tokens and tokens[0].startswith("-"):  # the launcher's own options
            tokens = tokens[1:]
    if len(tokens) >= 3 and tokens[0].startswith("python") and tokens[1] == "-m":
        tokens = tokens[2:]
    if not tokens:
        return ""
    program = tokens[0].rsplit("/", 1)[-1]
    args = [t for t in tokens[1:] if not t.startswith("-")]
    if program in _ON_A_PATH:  # `tsx scripts/a.ts`, `ls types/`: what it runs or reads
        return " ".join([program, *args[:1]])[:120]
    words = [program]
    for t in tokens[1:3]:
        if not _WORD.match(t):
            break
        words.append(t)
    head = " ".join(words)
    runner = next((r for r in _TEST_RUNNERS if head == r or head.startswith(r + " ")), "")
    if runner:
        nodes = [t for t in tokens[1:] if not t.startswith("-") and ("/" in t or "::" in t
                                                                      or "." in t)]  # fmt: skip
        head = " ".join([runner, *sorted(nodes)[:4]])
    return head[:120]


def target_of(tool: str, tool_input: dict[str, Any], cwd: str, command: str) -> str:
    """What a call aimed at, as a key: a later call of the same kind on it resolves a failure
    (`bash:npm run build`, `edit:src/a.py`, `read:.env`, `agent:Review`)."""
    if tool == "Bash":
        return "bash:" + command_head(command)
    if tool in _EDIT_TOOLS:
        return "edit:" + command
    if tool in _READ_TOOLS:
        return "read:" + command
    if tool in _SEARCH_TOOLS:
        return "search:" + command
    if tool in AGENT_TOOLS:
        kind = tool_input.get("subagent_type")
        return f"agent:{kind or command}"
    return f"{tool}:{command}"


def resolves(success_target: str, failure_target: str) -> bool:
    """Whether a call that passed on `success_target` gets past a failure on `failure_target`:
    the same target, or a test run that includes the failed tests (the whole suite)."""
    if success_target == failure_target:
        return True
    head = success_target.removeprefix("bash:")
    return (
        success_target.startswith("bash:")
        and head in _TEST_RUNNERS
        and failure_target.startswith(success_target + " ")
    )


def quoted(text: str, limit: int = 160) -> str:
    """Recorded text shown as a quotation: one line, straight quotes inside made single."""
    line = " ".join(text.split()).replace('"', "'")
    if len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return f'"{line}"'


def describe_failure(tool: str, shown: str, code: str, error_line: str) -> str:
    """One line: the tool once, what it ran, the exit code, and what it printed, quoted once:
    'Bash `npm test` failed (exit 1) and printed: "FAILED tests/a.py::t"'."""
    head = f"{tool} `{shown}` failed" if shown else f"{tool} failed"
    if code:
        head += f" (exit {code})"
    if not error_line or error_line == "interrupted":
        return head
    said = "printed" if tool == "Bash" else "said"
    return f"{head} and {said}: {quoted(error_line)}"


def failure_line(
    description: str,
    count: int = 1,
    cascades: int = 0,
    resolved: bool = False,
    prevention: str = "",
) -> str:
    """A failure as one note line: its description, how often, what followed, its fate."""
    line = description
    extra = []
    if count > 1:
        extra.append(f"{count} times")
    if cascades:
        extra.append(f"{cascades} parallel call{'s' if cascades > 1 else ''} cancelled with it")
    if extra:
        line += f" ({', '.join(extra)})"
    if resolved:
        return f"{line}; resolved: {prevention}" if prevention else f"{line}; resolved"
    return line
