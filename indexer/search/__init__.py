"""The full-text search index (SQLite FTS5): its schema, upkeep and queries."""
