"""Per-session, per-agent JSONL views: written after commits, ordered, rebuilt."""
