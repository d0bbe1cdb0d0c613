"""`ctxd doctor` for Codex CLI: ctxd's hooks there, trusted as written, with the feature on."""

# Codex skips a hook that is not trusted, or whose trusted hash no longer matches it, without
# a word: this check is where a user finds out.

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

from indexer import codex_home
from summarizer.cli.setup.codex_config import FEATURE
from summarizer.cli.setup.codex_install import EVENTS, our_trust

__all__ = ["codex_check"]


def codex_check(root: Path, check: Any) -> Any | None:
    """The doctor line for ctxd's Codex hooks (`check` makes it: status, name, detail, fix);
    None when neither the project's nor the user's hooks.json has any."""
    home = codex_home(os.environ)
    found: dict[Path, dict[str, str]] = {}
    events: set[str] = set()
    for path in (root / ".codex" / "hooks.json", home / "hooks.json"):
        try:
            doc = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        want = our_trust(path, doc)
        if want:
            found[path] = want
            events |= {key.rsplit(":", 3)[1] for key in want}
    if not found:
        return None
    where = ", ".join(str(p) for p in found)
    again = "run `ctxd init --host codex` again (with --user for $CODEX_HOME/hooks.json)"
    config = _config(home / "config.toml")
    features = config.get("features")
    if isinstance(features, dict) and features.get(FEATURE) is False:
        off = f"Codex's hooks feature is off in {home / 'config.toml'}"
        return check("FAIL", "codex hooks", off, again)
    hooks = config.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    state = state if isinstance(state, dict) else {}
    untrusted = [
        key for want in found.values() for key, value in want.items()
        if not isinstance(state.get(key), dict) or state[key].get("trusted_hash") != value
    ]  # fmt: skip
    if untrusted:
        return check(
            "WARN", "codex hooks",
            f"{len(untrusted)} of ctxd's Codex hooks in {where} are not trusted as written:"
            " Codex skips them without a word", again,
        )  # fmt: skip
    if len(events) < len(EVENTS):
        return check("WARN", "codex hooks", f"not installed for every event (in {where})", again)
    return check("OK", "codex hooks", f"all {len(EVENTS)} events installed in {where}, trusted")


def _config(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
