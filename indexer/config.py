"""Configuration: defaults in Structs, `parse_config` (pure) and `load_config` (the only I/O)."""

from __future__ import annotations

from pathlib import Path

import msgspec

from indexer.errors import ConfigError

# forbid_unknown_fields: a typo in the user's config.toml is an error that names the key,
# not a silently ignored setting.


class IngestConfig(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    batch_lines: int = 2000
    batch_bytes: int = 2 * 1024 * 1024
    max_line_bytes: int = 64 * 1024 * 1024
    partial_grace_s: float = 120.0
    max_text_chars: int = 16000
    max_detail_bytes: int = 4096
    prepare_worker: bool = False


class DaemonConfig(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    rescan_interval_s: float = 1.0
    rescan_idle_interval_s: float = 5.0
    heartbeat_interval_s: float = 5.0
    log_max_bytes: int = 1024 * 1024
    log_backups: int = 3
    autostart: bool = False


class SummarizerConfig(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    interval_s: float = 300.0
    completions_trigger: int = 5
    encoding: str = "cl100k_base"
    summary_max_tokens: int = 2000
    injection_budget: int = 2000
    summary_budget: int = 1500
    decisions_budget: int = 150
    failures_budget: int = 100
    constraints_budget: int = 250
    max_decisions: int = 20
    max_failures: int = 10
    max_constraints: int = 20
    context_file_max_tokens: int = 4000
    recency_half_life_h: float = 24.0
    weight_explicit: float = 3.0
    weight_compact_summary: float = 2.0
    weight_user_prompt: float = 2.0
    weight_agent_output: float = 1.0
    weight_tool: float = 1.0
    backend: str = "extractive"
    command: list[str] = msgspec.field(default_factory=list)
    command_timeout_s: float = 60.0
    request_timeout_s: float = 30.0


class ResumeConfig(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    max_tokens: int = 2000
    max_chars: int = 10000
    inject_on: list[str] = msgspec.field(default_factory=lambda: ["compact", "resume", "clear"])
    inject_on_startup: bool = True
    build_timeout_s: float = 3.0
    prebuild: bool = True
    subagent_max_tokens: int = 1500
    recall_on_action: bool = True


class RetentionConfig(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    spool_hours: float = 72.0
    index_days: float = 0.0
    quarantine_days: float = 7.0
    interval_s: float = 3600.0


class TasksConfig(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    roles: list[str] = msgspec.field(
        default_factory=lambda: ["implementer", "reviewer", "validator"]
    )
    lock_timeout_s: float = 10.0
    field_warn_bytes: int = 2048
    diff_warn_bytes: int = 10 * 1024 * 1024
    qa_commands: list[str] = msgspec.field(default_factory=list)
    citations: dict[str, list[str]] = msgspec.field(default_factory=dict)


class TeamConfig(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    dsn: str = ""
    project: str = ""
    user: str = ""
    startup: bool = False
    batch_rows: int = 5000
    batch_bytes: int = 8 * 1024 * 1024
    retry_max_s: float = 60.0
    connect_timeout_s: float = 5.0


class Config(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """The whole configuration; every key is documented in the project's config.toml."""

    ingest: IngestConfig = msgspec.field(default_factory=IngestConfig)
    daemon: DaemonConfig = msgspec.field(default_factory=DaemonConfig)
    summarizer: SummarizerConfig = msgspec.field(default_factory=SummarizerConfig)
    resume: ResumeConfig = msgspec.field(default_factory=ResumeConfig)
    retention: RetentionConfig = msgspec.field(default_factory=RetentionConfig)
    tasks: TasksConfig = msgspec.field(default_factory=TasksConfig)
    team: TeamConfig = msgspec.field(default_factory=TeamConfig)


def parse_config(data: bytes, source: str = "config.toml") -> Config:
    """Decode TOML bytes into a Config; unknown keys and wrong types raise ConfigError."""
    try:
        config = msgspec.toml.decode(data, type=Config)
    except (msgspec.DecodeError, ValueError) as e:
        raise ConfigError(f"{source}: {e}; fix the key or delete it to use the default") from e
    _validate(config, source)
    return config


def load_config(path: Path) -> Config:
    """Read `path` if it exists, else return the defaults."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Config()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read ({e.strerror})") from e
    return parse_config(data, str(path))


def _validate(config: Config, source: str) -> None:
    checks: list[tuple[bool, str]] = [
        (config.ingest.batch_lines >= 1, "[ingest] batch_lines must be >= 1"),
        (config.ingest.max_line_bytes >= 4096, "[ingest] max_line_bytes must be >= 4096"),
        (config.daemon.rescan_interval_s > 0, "[daemon] rescan_interval_s must be > 0"),
        (
            config.daemon.rescan_idle_interval_s >= config.daemon.rescan_interval_s,
            "[daemon] rescan_idle_interval_s must be >= rescan_interval_s",
        ),
        (config.summarizer.interval_s > 0, "[summarizer] interval_s must be > 0"),
        (
            config.summarizer.completions_trigger >= 1,
            "[summarizer] completions_trigger must be >= 1",
        ),
        (
            config.summarizer.summary_max_tokens > 0,
            "[summarizer] summary_max_tokens must be > 0",
        ),
        (config.summarizer.injection_budget > 0, "[summarizer] injection_budget must be > 0"),
        (
            config.summarizer.context_file_max_tokens > 0,
            "[summarizer] context_file_max_tokens must be > 0",
        ),
        (config.summarizer.request_timeout_s > 0, "[summarizer] request_timeout_s must be > 0"),
        (
            config.summarizer.backend in ("extractive", "command"),
            '[summarizer] backend must be "extractive" or "command"',
        ),
        (
            config.summarizer.backend != "command" or bool(config.summarizer.command),
            '[summarizer] backend = "command" needs [summarizer] command = ["prog", "arg", …]',
        ),
        (0 < config.resume.max_chars <= 10000, "[resume] max_chars must be in 1..10000"),
        (config.resume.max_tokens > 0, "[resume] max_tokens must be > 0"),
        (config.resume.subagent_max_tokens > 0, "[resume] subagent_max_tokens must be > 0"),
        (config.retention.spool_hours > 0, "[retention] spool_hours must be > 0"),
        (config.retention.index_days >= 0, "[retention] index_days must be >= 0 (0 = keep)"),
        (len(config.tasks.roles) >= 1, "[tasks] roles must name at least one role"),
        (config.tasks.lock_timeout_s > 0, "[tasks] lock_timeout_s must be > 0"),
        (config.team.batch_rows >= 1, "[team] batch_rows must be >= 1"),
        (config.team.batch_bytes >= 65536, "[team] batch_bytes must be >= 65536"),
        (config.team.retry_max_s >= 1, "[team] retry_max_s must be >= 1"),
        (config.team.connect_timeout_s >= 1, "[team] connect_timeout_s must be >= 1"),
    ]
    for ok, message in checks:
        if not ok:
            raise ConfigError(f"{source}: {message}")
