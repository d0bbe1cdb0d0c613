"""`ctxd init`'s MCP part: register `ctxd mcp` in the project's `.mcp.json` (and approve it).

Only our entry is added or removed; every other server and key stays as it was. Claude Code
asks before it starts a project's servers; `ctxd init` is that approval for ours, recorded
in the untracked `.claude/settings.local.json` like Claude Code's own prompt does.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from indexer import CtxdError
from summarizer.common.programs import COMMAND_MODULE

__all__ = ["SERVER_NAME", "McpConfigError", "mcp_server_spec", "register_mcp", "unregister_mcp"]

SERVER_NAME = "ctxd"
_APPROVALS = "enabledMcpjsonServers"


class McpConfigError(CtxdError):
    """`.mcp.json` or the local settings cannot be read or written."""


def mcp_server_spec(portable: bool = False) -> dict[str, Any]:
    """The `.mcp.json` entry that runs `ctxd mcp`: this installation's interpreter by absolute
    path, or (`portable`, for a file the team commits) the `ctxd` command looked up on PATH."""
    if portable:
        return {"type": "stdio", "command": "ctxd", "args": ["mcp"]}
    return {
        "type": "stdio",
        "command": os.path.abspath(sys.executable),
        "args": ["-m", COMMAND_MODULE, "mcp"],
    }


def is_ours(entry: object) -> bool:
    """True for an entry that runs `ctxd mcp` (by any interpreter or the `ctxd` script)."""
    if not isinstance(entry, dict):
        return False
    words = [str(entry.get("command", "")), *(str(a) for a in entry.get("args") or [])]
    return words[-1:] == ["mcp"] and any(
        w == COMMAND_MODULE or w.endswith("/ctxd") or w == "ctxd" for w in words
    )


def register_mcp(root: Path, *, dry_run: bool = False, shared: bool = False) -> list[str]:
    """Add (or update) our server in `<root>/.mcp.json` and approve it; return the changes.

    `shared`: the portable entry, approved in `.claude/settings.json` (both committed);
    otherwise this machine's entry, approved in `.claude/settings.local.json`.
    """
    changes: list[str] = []
    mcp_path = root / ".mcp.json"
    spec = mcp_server_spec(portable=shared)
    doc = _load(mcp_path)
    servers = doc.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise McpConfigError(f"{mcp_path}: mcpServers is not an object; fix it by hand")
    current = servers.get(SERVER_NAME)
    if current is not None and not is_ours(current):
        return [f"{mcp_path}: left the other server named {SERVER_NAME!r} in place"]
    if not shared and current == mcp_server_spec(portable=True):
        return []  # the team's portable entry (`ctxd init --shared`) serves this machine too
    if current != spec:
        servers[SERVER_NAME] = spec
        changes.append(f"{mcp_path}: MCP server {SERVER_NAME!r} -> {SERVER_NAME} mcp")
        if not dry_run:
            _write(mcp_path, doc)
    local = root / ".claude" / ("settings.json" if shared else "settings.local.json")
    settings = _load(local)
    approved = settings.get(_APPROVALS, [])
    if isinstance(approved, list) and SERVER_NAME not in approved:
        settings[_APPROVALS] = [*approved, SERVER_NAME]
        changes.append(f"{local}: approved the project MCP server {SERVER_NAME!r}")
        if not dry_run:
            _write(local, settings)
    return changes


def unregister_mcp(root: Path, *, dry_run: bool = False, only: Path | None = None) -> list[str]:
    """Remove our server and its approval; anything else stays. Return the changes.

    `only`: withdraw the approval from that one settings file, nothing else.
    """
    changes: list[str] = []
    mcp_path = root / ".mcp.json"
    if mcp_path.exists() and only is None:
        doc = _load(mcp_path)
        servers = doc.get("mcpServers")
        if isinstance(servers, dict) and is_ours(servers.get(SERVER_NAME)):
            del servers[SERVER_NAME]
            changes.append(f"{mcp_path}: removed MCP server {SERVER_NAME!r}")
            if not dry_run:
                _write(mcp_path, doc)
    candidates = (root / ".claude" / "settings.local.json", root / ".claude" / "settings.json")
    for local in [only] if only is not None else candidates:
        if not local.exists():
            continue
        settings = _load(local)
        approved = settings.get(_APPROVALS)
        if isinstance(approved, list) and SERVER_NAME in approved:
            settings[_APPROVALS] = [a for a in approved if a != SERVER_NAME]
            if not settings[_APPROVALS]:
                del settings[_APPROVALS]
            changes.append(f"{local}: withdrew the approval of {SERVER_NAME!r}")
            if not dry_run:
                _write(local, settings)
    return changes


def _load(path: Path) -> dict[str, Any]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise McpConfigError(f"cannot read {path}: {e.strerror}") from e
    with os.fdopen(fd, "rb") as f:
        data = f.read()
    if not data.strip():
        return {}
    try:
        doc = json.loads(data)
    except ValueError as e:
        raise McpConfigError(f"{path} is not valid JSON ({e}); fix or remove it") from e
    if not isinstance(doc, dict):
        raise McpConfigError(f"{path} is not a JSON object; fix or remove it")
    return doc


def _write(path: Path, doc: dict[str, Any]) -> None:
    """Temp file + fsync + rename, keeping the file's mode (0644 for a new one: it is the
    project's, not ctxd's state)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = os.stat(path, follow_symlinks=False).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write((json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode())
        f.flush()
        os.fsync(f.fileno())
    os.chmod(tmp, mode)
    os.replace(tmp, path)
