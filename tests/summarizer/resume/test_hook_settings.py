"""The SessionStart hook's settings and output cap, in process: every invalid value falls back."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from summarizer.resume.hook_config import _fast, parse_settings
from summarizer.resume.hook_output import cap, hook_output, utf16_len
from summarizer.resume.hook_settings import HookSettings, read_settings

DEFAULTS = {
    "inject_on": ["compact", "resume", "clear"],
    "inject_on_startup": True,
    "build_timeout_s": 3.0,
    "max_chars": 10000,
    "autostart": False,
    "prebuild": True,
    "subagent_max_tokens": 1500,
}


def _fields(settings: HookSettings) -> dict[str, Any]:
    return {k: getattr(settings, k) for k in DEFAULTS}


def _read(tmp_path: Path, text: str | bytes) -> dict[str, Any]:
    data = text.encode() if isinstance(text, str) else text
    (tmp_path / "config.toml").write_bytes(data)
    return _fields(read_settings(str(tmp_path)))


def test_no_config_gives_the_defaults(tmp_path: Path) -> None:
    assert _fields(read_settings(str(tmp_path))) == DEFAULTS
    assert _fields(HookSettings(None)) == DEFAULTS
    assert _fields(HookSettings({"resume": "not a table", "daemon": 3})) == DEFAULTS


def test_valid_values_are_taken(tmp_path: Path) -> None:
    text = (
        "[resume]\n"
        'inject_on = ["compact"]\n'
        "inject_on_startup = false\n"
        "build_timeout_s = 7\n"
        "max_chars = 10000\n"
        "prebuild = false\n"
        "subagent_max_tokens = 1\n"
        "[daemon]\n"
        "autostart = true\n"
    )
    assert _read(tmp_path, text) == {
        "inject_on": ["compact"],
        "inject_on_startup": False,
        "build_timeout_s": 7.0,
        "max_chars": 10000,
        "autostart": True,
        "prebuild": False,
        "subagent_max_tokens": 1,
    }
    assert isinstance(read_settings(str(tmp_path)).build_timeout_s, float)
    assert _read(tmp_path, "[resume]\nmax_chars = 1\nbuild_timeout_s = 0.5\n")["max_chars"] == 1


@pytest.mark.parametrize(
    ("key", "value", "field", "expected"),
    [
        ("inject_on", '"compact"', "inject_on", []),
        ("inject_on", '["compact", 3, "clear"]', "inject_on", ["compact", "clear"]),
        # Anything but true itself turns the startup memory off.
        ("inject_on_startup", '"true"', "inject_on_startup", False),
        ("inject_on_startup", "1", "inject_on_startup", False),
        ("build_timeout_s", '"9"', "build_timeout_s", 3.0),
        ("max_chars", "0", "max_chars", 10000),
        ("max_chars", "10001", "max_chars", 10000),
        ("max_chars", "5000.0", "max_chars", 10000),
        ("prebuild", '"no"', "prebuild", False),
        ("subagent_max_tokens", "0", "subagent_max_tokens", 1500),
        ("subagent_max_tokens", "-5", "subagent_max_tokens", 1500),
        ("subagent_max_tokens", "true", "subagent_max_tokens", 1500),
        ("subagent_max_tokens", "12.5", "subagent_max_tokens", 1500),
    ],
)
def test_an_invalid_value_falls_back(
    tmp_path: Path, key: str, value: str, field: str, expected: object
) -> None:
    assert _read(tmp_path, f"[resume]\n{key} = {value}\n")[field] == expected


def test_autostart_must_be_true_itself(tmp_path: Path) -> None:
    assert _read(tmp_path, '[daemon]\nautostart = "true"\n')["autostart"] is False
    assert _read(tmp_path, "[daemon]\nautostart = 1\n")["autostart"] is False


@pytest.mark.parametrize(
    "data",
    [b"[resume\nmax_chars = 5\n", b"[resume]\nmax_chars = \xff\n"],
    ids=["invalid-toml", "not-utf8"],
)
def test_an_unreadable_config_gives_the_defaults(tmp_path: Path, data: bytes) -> None:
    assert _read(tmp_path, data) == DEFAULTS


def test_a_fifo_in_place_of_the_config_is_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "config.toml")
    assert _fields(read_settings(str(tmp_path))) == DEFAULTS


def test_the_output_is_one_json_line_claude_code_reads() -> None:
    out = hook_output('say "hi"\n\tdone \U0001f600')
    assert out == (
        '{"hookSpecificOutput":{"hookEventName":"SessionStart",'
        '"additionalContext":"say \\"hi\\"\\n\\tdone \U0001f600"}}\n'
    )
    assert json.loads(out)["hookSpecificOutput"]["additionalContext"] == 'say "hi"\n\tdone \U0001f600'


def test_text_that_is_not_valid_unicode_still_gives_valid_json() -> None:
    out = hook_output("a\ud800b")  # a lone surrogate (from a JSON escape in some record)
    assert out == (
        '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"a?b"}}\n'
    )


def test_cap_keeps_text_within_its_limit_untouched() -> None:
    assert cap("a" * 100, 100) == "a" * 100
    assert cap("\U0001f600" * 50, 100) == "\U0001f600" * 50  # 100 UTF-16 units exactly
    assert utf16_len("\U0001f600" * 50) == 100
    assert isinstance(utf16_len("ab"), int)
    text = "a" * 60 + "\n" + "b" * 30  # over half the limit, within it: not cut at its line end
    assert cap(text, 100) == text


def test_cap_counts_astral_characters_twice_and_cuts_at_a_line_end() -> None:
    assert cap("\U0001f600" * 51, 100) == "\U0001f600" * 50
    text = "a" * 60 + "\n" + "b" * 60
    assert cap(text, 100) == "a" * 60  # the line end lies past the half: cut there
    text = "a" * 40 + "\n" + "b" * 80
    assert cap(text, 100) == text[:100]  # a line end before the half: cut mid-line
    text = "a" * 50 + "\n" + "b" * 80
    assert cap(text, 100) == text[:100]  # at the half exactly: still mid-line


@pytest.mark.parametrize(
    "value",
    ['["compact]', "[compact]", "[XcompactX]", "[\"compact']"],
    ids=["unclosed", "unquoted", "x-quoted", "mixed-quotes"],
)
def test_a_string_the_fast_reader_cannot_read_goes_to_tomllib_which_refuses_it(
    value: str,
) -> None:
    with pytest.raises(ValueError):
        parse_settings(f"[resume]\ninject_on = {value}\n")


def test_escapes_are_left_to_tomllib_and_empty_strings_read_fast() -> None:
    assert _fast('[resume]\ninject_on = ["a\\tb"]\n') is None
    assert parse_settings('[resume]\ninject_on = ["a\\tb"]\n')["resume"] == {"inject_on": ["a\tb"]}
    assert _fast('[resume]\ninject_on = ["", \'x\']\n') == {
        "resume": {"inject_on": ["", "x"]},
        "daemon": {},
    }


def _only(**resume: object) -> dict[str, dict[str, object]]:
    return {"resume": dict(resume), "daemon": {}}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[resume]\ninject_on = [\n  "compact",\n  "clear",\n]\n', _only(inject_on=["compact", "clear"])),
        ("[resume]\nbuild_timeout_s = 2e0\nmax_chars = 5E3\nsubagent_max_tokens = 1_500\n",
         _only(build_timeout_s=2.0, max_chars=5000.0, subagent_max_tokens=1500)),
        ('[resume]\ninject_on = ["a#b", \'c\'] # a "comment"\n', _only(inject_on=["a#b", "c"])),
        ('[resume]\ninject_on = "compact"\n', _only(inject_on="compact")),
        ('[resume]\ninject_on = ["a=b"]\n', _only(inject_on=["a=b"])),
        ("[daemon]\nautostart = true # on\n[resume]\nprebuild = false\n",
         {"resume": {"prebuild": False}, "daemon": {"autostart": True}}),
        ('[other]\nnote = "x"\n[resume]\nprebuild = true\n', _only(prebuild=True)),
        # What it leaves to tomllib:
        ('title = """x"""\n', None),
        ("title = '''x'''\n", None),
        ("[[resume]]\nprebuild = true\n", None),
        ("resume.prebuild = true\n", None),
        ("[other]\nlist = [\n  1,\n  2]\n[resume]\nprebuild = false\n", None),
        ("[other]\nt = {\n  a = 1 }\n", None),
        ('[resume]\ninject_on = [\n  "compact",\n', None),
        ("[resume]\nmax_chars = 5]\n", None),
        ('[resume]\ninject_on = ["a", 3]\n', None),
    ],
    ids=["multi-line-array", "numbers", "comment-after-hash-in-string", "plain-string",
         "equals-in-a-value", "two-tables", "other-table", "basic-multi-line",
         "literal-multi-line", "array-of-tables", "dotted-key", "other-multi-line-array",
         "other-multi-line-table", "unclosed-array", "stray-bracket", "non-string-item"],
)
def test_the_fast_reader_reads_flat_config_and_leaves_the_rest_to_tomllib(
    text: str, expected: object
) -> None:
    assert _fast(text) == expected
