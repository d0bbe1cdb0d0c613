"""indexer/config.py: defaults, TOML decoding, and a validation message that names its key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from indexer.config import Config, load_config, parse_config
from indexer.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]

# (section, key, a bad value as TOML) for every value check: the message must name the key.
BAD_VALUES = [
    ("ingest", "batch_lines", "0"),
    ("ingest", "max_line_bytes", "4095"),
    ("daemon", "rescan_interval_s", "0.0"),
    ("summarizer", "interval_s", "-1.0"),
    ("summarizer", "completions_trigger", "0"),
    ("summarizer", "summary_max_tokens", "0"),
    ("summarizer", "injection_budget", "0"),
    ("summarizer", "context_file_max_tokens", "0"),
    ("summarizer", "request_timeout_s", "0.0"),
    ("summarizer", "backend", '"gpt"'),
    ("summarizer", "backend", '"command"'),  # command without [summarizer] command
    ("resume", "max_chars", "0"),
    ("resume", "max_chars", "10001"),
    ("resume", "max_tokens", "0"),
    ("retention", "spool_hours", "0.0"),
    ("retention", "index_days", "-1.0"),
]


@pytest.mark.parametrize(("section", "key", "value"), BAD_VALUES)
def test_each_bad_value_is_refused_with_its_key_named(section: str, key: str, value: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(f"[{section}]\n{key} = {value}\n".encode(), "my.toml")
    message = str(err.value)
    assert message.startswith("my.toml: ")
    assert f"[{section}]" in message
    assert key in message


@pytest.mark.parametrize(
    ("key", "other"),
    [("summary_max_tokens", "injection_budget"), ("injection_budget", "summary_max_tokens")],
)
def test_a_message_names_the_bad_key_not_a_valid_neighbour(key: str, other: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(f"[summarizer]\n{key} = 0\n{other} = 10\n".encode())
    assert key in str(err.value)
    assert other not in str(err.value)


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("ingest", "batch_lines", "1"),
        ("ingest", "max_line_bytes", "4096"),
        ("resume", "max_chars", "1"),
        ("resume", "max_chars", "10000"),
        ("retention", "index_days", "0.0"),
        ("summarizer", "completions_trigger", "1"),
    ],
)
def test_boundary_values_are_accepted(section: str, key: str, value: str) -> None:
    config = parse_config(f"[{section}]\n{key} = {value}\n".encode())
    assert getattr(getattr(config, section), key) == float(value)


def test_command_backend_with_a_command_is_accepted() -> None:
    config = parse_config(b'[summarizer]\nbackend = "command"\ncommand = ["claude", "-p"]\n')
    assert config.summarizer.backend == "command"
    assert config.summarizer.command == ["claude", "-p"]


@pytest.mark.parametrize(
    ("toml", "named"),
    [
        (b"[ingest]\nbatch_linez = 5\n", "batch_linez"),
        (b"[ingestt]\nbatch_lines = 5\n", "ingestt"),
        (b'[ingest]\nbatch_lines = "many"\n', "batch_lines"),
        (b"[resume]\ninject_on = 3\n", "inject_on"),
        (b"[daemon]\nautostart = 1\n", "autostart"),
    ],
)
def test_unknown_keys_and_wrong_types_name_the_key(toml: bytes, named: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(toml, "cfg.toml")
    message = str(err.value)
    assert message.startswith("cfg.toml: ")
    assert named in message
    assert "fix the key or delete it" in message


def test_malformed_toml_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"^x\.toml: "):
        parse_config(b"[ingest\nbatch_lines = 1\n", "x.toml")


def test_an_empty_file_gives_the_documented_defaults() -> None:
    config = parse_config(b"")
    assert config.ingest.batch_lines == 2000
    assert config.ingest.max_line_bytes == 67108864
    assert config.daemon.rescan_interval_s == 1.0
    assert config.daemon.autostart is False
    assert config.summarizer.encoding == "cl100k_base"
    assert config.summarizer.backend == "extractive"
    assert config.summarizer.command == []
    assert config.resume.max_chars == 10000
    assert config.resume.inject_on == ["compact", "resume", "clear"]
    assert config.retention.spool_hours == 72.0
    assert config.retention.index_days == 0.0


def test_a_set_key_overrides_only_itself() -> None:
    config = parse_config(b"[summarizer]\nmax_decisions = 7\n")
    assert config.summarizer.max_decisions == 7
    assert config.summarizer.max_failures == 10
    assert config.ingest.batch_lines == 2000


def test_the_shipped_default_config_parses_to_the_struct_defaults() -> None:
    shipped = (ROOT / "indexer" / "default_config.toml").read_bytes()
    assert parse_config(shipped) == Config()


def test_load_config_of_a_missing_file_gives_the_defaults(tmp_path: Path) -> None:
    assert load_config(tmp_path / "absent.toml") == Config()


def test_load_config_reads_the_file_and_names_it_in_errors(tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text("[daemon]\nlog_backups = 9\n")
    assert load_config(good).daemon.log_backups == 9
    bad = tmp_path / "bad.toml"
    bad.write_text("[daemon]\nrescan_interval_s = 0\n")
    with pytest.raises(ConfigError) as err:
        load_config(bad)
    assert str(err.value).startswith(f"{bad}: ")
    assert "rescan_interval_s" in str(err.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a 0000 file")
def test_an_unreadable_file_is_a_config_error_naming_the_path(tmp_path: Path) -> None:
    locked = tmp_path / "locked.toml"
    locked.write_text("[daemon]\n")
    locked.chmod(0)
    try:
        with pytest.raises(ConfigError, match="cannot read") as err:
            load_config(locked)
        assert str(locked) in str(err.value)
    finally:
        locked.chmod(0o600)


def test_a_directory_in_place_of_the_file_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "config.toml").mkdir()
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "config.toml")
