"""Search across sessions: query parsing, ranking and the current-index read path."""
