"""The MCP server: search and memory tools for Claude Code, each answer within a token budget."""
