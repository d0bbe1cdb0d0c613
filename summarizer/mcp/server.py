"""`ctxd mcp`: the recall tools served over stdio with the official MCP SDK (imported here only)."""

from __future__ import annotations

from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from indexer import CtxdError, StatePaths, redact_text
from summarizer.mcp import team_tools, tools
from summarizer.search.service import Filters

Kind = Literal["prompt", "tool", "error", "decision", "constraint", "failure", "summary", "agent"]
# "team": the same answer from the team store (every machine of the project), when one is set.
Scope = Literal["local", "team"]
# Descriptions stay short: Claude Code sends them with every request.
_BUDGET = "budget: max tokens of the answer (default 2000)."


def build_server(paths: StatePaths) -> MCPServer[Any]:
    """An MCP server whose tools read the state directory `paths`."""
    server: MCPServer[Any] = MCPServer("ctxd", instructions="Recall of past Claude Code sessions.")

    def run(call: Any, *args: Any, **kwargs: Any) -> str:
        # Redacted again as a whole (each tool redacts its texts before cutting them): what
        # goes back to the model, an error that quotes an argument included, is redacted.
        try:
            return redact_text(str(call(paths, *args, **kwargs)))
        except CtxdError as e:  # a bad argument or state: the caller gets the one-line reason
            raise ToolError(redact_text(str(e))) from None

    @server.tool(
        structured_output=False,
        description=f"Full-text search of past sessions (all words must match). {_BUDGET}",
    )
    def search(
        query: str,
        session: str | None = None,
        agent: str | None = None,
        kind: Kind | None = None,
        since: str | None = None,
        limit: int = 10,
        budget: int = tools.DEFAULT_BUDGET,
        scope: Scope = "local",
    ) -> str:
        kinds = (kind,) if kind else ()
        filters = Filters(session=session, agent=agent, kinds=kinds, since=since, limit=limit)
        tool = team_tools.search_tool if scope == "team" else tools.search_tool
        return run(tool, query, filters, budget)

    @server.tool(structured_output=False, description=f"Recent sessions, newest first. {_BUDGET}")
    def sessions(
        limit: int = 20, budget: int = tools.DEFAULT_BUDGET, scope: Scope = "local"
    ) -> str:
        return run(
            team_tools.sessions_tool if scope == "team" else tools.sessions_tool, limit, budget
        )

    @server.tool(
        structured_output=False,
        description=f"One session's resume package (id or prefix). {_BUDGET}",
    )
    def session(session: str, budget: int = tools.DEFAULT_BUDGET, scope: Scope = "local") -> str:
        return run(
            team_tools.session_tool if scope == "team" else tools.session_tool, session, budget
        )

    @server.tool(
        structured_output=False,
        description=f"An agent's latest events ('main' = orchestrator). {_BUDGET}",
    )
    def agent_history(
        agent_id: str,
        session: str | None = None,
        lines: int = 50,
        budget: int = tools.DEFAULT_BUDGET,
        scope: Scope = "local",
    ) -> str:
        tool = team_tools.agent_history_tool if scope == "team" else tools.agent_history_tool
        return run(tool, agent_id, session, lines, budget)

    @server.tool(
        structured_output=False,
        description=f"Failures: unresolved, and resolved with their fix. {_BUDGET}",
    )
    def failures(
        session: str | None = None, budget: int = tools.DEFAULT_BUDGET, scope: Scope = "local"
    ) -> str:
        return run(
            team_tools.failures_tool if scope == "team" else tools.failures_tool, session, budget
        )

    @server.tool(
        structured_output=False, description=f"Decisions and constraints in force. {_BUDGET}"
    )
    def decisions(budget: int = tools.DEFAULT_BUDGET, scope: Scope = "local") -> str:
        return run(team_tools.decisions_tool if scope == "team" else tools.decisions_tool, budget)

    return server


def serve(paths: StatePaths) -> None:
    """Serve over stdin/stdout until the client closes the connection."""
    build_server(paths).run("stdio")
