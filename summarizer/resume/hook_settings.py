"""The SessionStart hook's settings from the state directory's config.toml (stdlib only)."""

from __future__ import annotations

import os
import stat

from summarizer.resume.files import MAX_CONTEXT_CHARS

# typing costs ~5 ms to import; this constant is the idiom type checkers understand.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class HookSettings:
    """The config keys the hook reads (defaults as in config.toml)."""

    def __init__(self, doc: dict[str, Any] | None = None) -> None:
        resume = _table(doc, "resume")
        daemon = _table(doc, "daemon")
        inject_on = resume.get("inject_on", ["compact", "resume", "clear"])
        self.inject_on = (
            [s for s in inject_on if isinstance(s, str)] if isinstance(inject_on, list) else []
        )
        self.inject_on_startup = resume.get("inject_on_startup", True) is True
        timeout = resume.get("build_timeout_s", 3.0)
        self.build_timeout_s = float(timeout) if isinstance(timeout, int | float) else 3.0
        max_chars = resume.get("max_chars", MAX_CONTEXT_CHARS)
        valid = isinstance(max_chars, int) and 0 < max_chars <= MAX_CONTEXT_CHARS
        self.max_chars = max_chars if valid else MAX_CONTEXT_CHARS
        self.autostart = daemon.get("autostart") is True
        self.prebuild = resume.get("prebuild", True) is True
        budget = resume.get("subagent_max_tokens", 1500)
        valid = isinstance(budget, int) and not isinstance(budget, bool) and budget > 0
        self.subagent_max_tokens = budget if valid else 1500


def read_settings(state_dir: str) -> HookSettings:
    """The hook's settings from `<state_dir>/config.toml`; defaults if missing or invalid."""
    try:
        # Without blocking, regular files only: a FIFO there must not hang the hook.
        fd = os.open(os.path.join(state_dir, "config.toml"), os.O_RDONLY | os.O_NONBLOCK)
        with open(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return HookSettings()
            data = f.read()
    except OSError:
        return HookSettings()
    try:
        from summarizer.resume.hook_config import parse_settings

        return HookSettings(dict(parse_settings(data.decode("utf-8"))))
    except (ValueError, UnicodeDecodeError):
        return HookSettings()  # `ctxd doctor` reports a bad config; the hook must not fail


def _table(doc: dict[str, Any] | None, name: str) -> dict[str, Any]:
    value = doc.get(name) if isinstance(doc, dict) else None
    return value if isinstance(value, dict) else {}
