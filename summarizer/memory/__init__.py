"""The memory: extraction, the fold, its tables, summaries, compaction, injection."""
