"""The nesting guard's fast paths judge every line exactly as one walk over its brackets does."""

from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.spool.lineguard import MAX_DEPTH, nesting_error


def walked(line: bytes, limit: int) -> str:
    """The plain definition: cut out the strings, walk every bracket left, keep the depth."""
    text = line.replace(b"\\\\", b"").replace(b'\\"', b"")
    depth = 0
    for c in b"".join(text.split(b'"')[::2]):
        if c in b"[{":
            depth += 1
            if depth > limit:
                return f"JSON nested deeper than {limit} levels"
        elif c in b"]}":
            depth -= 1
    return ""


# Lines made of what the guard looks at: brackets, quotes, backslashes and a filler byte.
_PIECES = st.sampled_from([b"[", b"{", b"]", b"}", b'"', b"\\", b"a", b"[[", b"]]", b"[]"])
_LINES = st.lists(_PIECES, max_size=120).map(b"".join)


@settings(max_examples=3000, deadline=None)
@given(_LINES, st.integers(min_value=0, max_value=12))
def test_the_guard_agrees_with_a_walk_over_every_bracket(line: bytes, limit: int) -> None:
    assert nesting_error(line, limit) == walked(line, limit)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=400), st.integers(min_value=0, max_value=400))
def test_balanced_json_at_any_depth_and_width(depth: int, siblings: int) -> None:
    """Real JSON around the real limit: many shallow siblings beside one deep chain."""
    value = json.dumps({"wide": [[1]] * siblings, "deep": "x"}).encode()
    line = value[:-1] + b',"chain":' + b"[" * depth + b"]" * depth + b"}"
    assert nesting_error(line) == walked(line, MAX_DEPTH)
    assert bool(nesting_error(line)) == (depth + 1 > MAX_DEPTH)


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"code": "[" * 1000 + '\\"{' * 500}).encode()
    assert nesting_error(text) == ""


def test_unbalanced_brackets_are_walked_like_before() -> None:
    # Closing brackets first take the depth below zero: the walk then never passes the limit.
    line = b"]" * 300 + b"[" * 300 + b"]" * 300
    assert nesting_error(line) == walked(line, MAX_DEPTH) == ""
    line = b"[" * 300 + b"]" * 10
    assert nesting_error(line) == walked(line, MAX_DEPTH) != ""


def test_lines_dense_in_quotes_take_the_replacing_path_and_agree() -> None:
    pieces = [b"[", b"{", b"]", b"}", b'"', b"\\", b"a", b'\\"', b"\\\\"]
    for seed in range(20):
        rng = random.Random(seed)
        line = b"".join(rng.choice(pieces) for _ in range(30_000))
        line = b"[" * 300 + line + b"]" * 300  # past the cheap count, whatever the draw
        assert line.count(b'"') * 32 > len(line)
        assert nesting_error(line) == walked(line, MAX_DEPTH)
        assert nesting_error(line, 20) == walked(line, 20)
