"""Did-you-mean for argparse errors: unknown commands and options get the closest known name."""

from __future__ import annotations

import argparse
import difflib
import re

__all__ = ["with_suggestion"]

_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from .*\)$")
_UNKNOWN = re.compile(r"unrecognized arguments: (.*)$")
_NUMBER = re.compile(r"invalid (int|float) value: ('.*')$")


def _closest(word: str, names: list[str]) -> str | None:
    found = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    return found[0] if found else None


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return [s for a in parser._actions for s in a.option_strings if s.startswith("--")]


def with_suggestion(
    parser: argparse.ArgumentParser, message: str, argv: list[str]
) -> tuple[str, str]:
    """`message` rewritten to name the unknown word once and, when one is close, the fix;
    and the `prog` whose --help explains the arguments."""
    m = _CHOICE.search(message)
    if m:
        word = m.group(1)
        # The argparse message lists every choice; the help lists them better.
        head = message[: m.start()].replace("argument COMMAND: ", "")
        choices = _choices(parser, message)
        best = _closest(word, choices)
        hint = f"; did you mean `{best}`?" if best else ""
        if "COMMAND" in message:  # the help lists the commands, grouped
            return f"{head}unknown command '{word}'{hint}", parser.prog
        if not best:
            hint = f"; use one of {', '.join(choices)}"
        return f"{head}unknown value '{word}'{hint}", parser.prog
    m = _NUMBER.search(message)
    if m:
        what = "a whole number" if m.group(1) == "int" else "a number"
        return f"{message[: m.start()]}expected {what}, got {m.group(2)}", parser.prog
    m = _UNKNOWN.search(message)
    if m:
        words = m.group(1).split()
        target = _subparser_for(parser, argv) or parser
        options = _options(target)
        hints = [f"`{b}`" for w in words if w.startswith("-") for b in [_closest(w, options)] if b]
        hint = f"; did you mean {', '.join(hints)}?" if hints else ""
        plural = "s" if len(words) > 1 else ""
        return f"unknown argument{plural} {' '.join(words)}{hint}", target.prog
    return message, parser.prog


def _choices(parser: argparse.ArgumentParser, message: str) -> list[str]:
    inside = message[message.rfind("(choose from ") + len("(choose from ") : -1]
    return [c.strip().strip("'") for c in inside.split(",")]


def _subparser_for(
    parser: argparse.ArgumentParser, argv: list[str]
) -> argparse.ArgumentParser | None:
    """The innermost (sub)command's parser named in `argv`, where an unknown option of
    `ctxd status --jsn` belongs."""
    found = None
    current = parser
    for word in argv:
        subs = [a for a in current._actions if isinstance(a, argparse._SubParsersAction)]
        if subs and word in subs[0].choices:
            current = subs[0].choices[word]
            found = current
    return found
