"""Claude Code transcripts and Codex rollouts as the hook payloads they hold."""
