"""The plugin's MCP server: the installed `ctxd mcp`, or one that says how to install ctxd."""

# Claude Code starts it as `python3 -I -S ${CLAUDE_PLUGIN_ROOT}/ctxd_hook/plugin_mcp.py`, with the
# project as its working directory. With the `ctxd` command installed, this process becomes
# its `ctxd mcp` (exec: the same stdio, nothing in between). Without it, a server that exits
# would be reported as failed in every session with no reason given; this one answers the
# protocol (newline-delimited JSON-RPC on stdio) with no tools, and its instructions say how
# to install the command. Standard library only.

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False  # typing costs more than this whole server's start
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import IO, Any

_NO_METHOD = -32601


def main() -> None:
    """Exec the installed `ctxd mcp`, else serve the install instructions until EOF."""
    sys.dont_write_bytecode = True  # once a session; the plugin's folder is Claude Code's
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from ctxd_hook import plugin

    _command, python = plugin.installed_ctxd()
    if python:
        # The interpreter by absolute path, isolated as the hook's delegate is.
        os.execv(python, [python, "-I", "-m", "summarizer.cli.app", "mcp"])  # noqa: S606
    source = plugin.install_source(os.environ.get("CLAUDE_PLUGIN_ROOT", ""))
    serve(sys.stdin, sys.stdout, instructions(plugin.install_command(source)))


def instructions(command: str) -> str:
    """What the model is told while the command is missing."""
    return (
        "ctxd records this session, but its `ctxd` command is not installed, so this server "
        "has no tools: no search of earlier sessions, no decisions or failures to look up. "
        f"If the user asks, it installs with `{command}`; the tools come with the next session."
    )


def serve(lines: Iterable[str], out: IO[str], text: str) -> None:
    """Answer initialize, tools/list and ping; every other request is an unknown method."""
    for line in lines:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message:
            continue  # a notification (initialized, cancelled) needs no answer
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        method = message.get("method")
        params = message.get("params")
        if method == "initialize":
            asked = params.get("protocolVersion") if isinstance(params, dict) else None
            reply["result"] = {
                "protocolVersion": asked if isinstance(asked, str) else "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "ctxd", "version": "not installed"},
                "instructions": text,
            }
        elif method == "tools/list":
            reply["result"] = {"tools": []}
        elif method == "ping":
            reply["result"] = {}
        else:
            reply["error"] = {"code": _NO_METHOD, "message": f"{method}: not available"}
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
