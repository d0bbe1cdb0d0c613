"""summarizer.common.plain: text fit to hand back (pure)."""

from __future__ import annotations

import pytest

from summarizer.common.plain import clean_line, clean_text, first_error_line, unwrap_summary


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("\x1b[31m✘ \x1b[41;31m[ERROR]\x1b[0m build failed", "✘ [ERROR] build failed"),
        ("[31m✘ [41;31m[ERROR[0m x", "✘ [ERROR x"),  # escapes that lost their ESC
        ("ok\ufffd\ufffd\ufffd done", "ok done"),
        ("a\x00b\x07c\r\nd\te", "abc\nd\te"),
        ("\x1b]0;title\x07plain", "plain"),
    ],
)
def test_clean_text(raw: str, clean: str) -> None:
    assert clean_text(raw) == clean


def test_clean_line_folds_and_clips() -> None:
    assert clean_line("a\n  b\tc", 10) == "a b c"
    assert clean_line("x" * 20, 10) == "x" * 9 + "…"


def test_unwrap_summary() -> None:
    text = "<analysis>\nthinking\n</analysis>\n\n<summary>\n1. Request: fix it\n</summary>"
    assert unwrap_summary(text) == "1. Request: fix it"
    assert unwrap_summary("<analysis>only thinking</analysis> rest") == "rest"
    assert unwrap_summary("plain summary") == "plain summary"
    assert unwrap_summary("<summary>cut short") == "cut short"


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (
            "Exit code 1\nWARNING: deprecated flag\nError: module not found",
            "Error: module not found",
        ),
        ("Exit code 128\nfatal: not a git repository", "fatal: not a git repository"),
        ("Exit code 2\nwarning: x\nsomething odd", "something odd"),
        ("Exit code 3", ""),
        ("Permission denied (publickey).", "Permission denied (publickey)."),
    ],
)
def test_first_error_line(error: str, line: str) -> None:
    assert first_error_line(error) == line
