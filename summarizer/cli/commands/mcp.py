"""`ctxd mcp`: serve the recall tools to Claude Code over MCP (stdio)."""

from __future__ import annotations

import argparse

from summarizer.common.cliargs import state_paths

__all__ = ["cmd_mcp"]


def cmd_mcp(args: argparse.Namespace) -> int:
    """Run the MCP server until its client disconnects."""
    from summarizer.mcp.server import serve  # the SDK is loaded by this command only

    serve(state_paths(args))
    return 0
