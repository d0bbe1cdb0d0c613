"""The resume path: a session's state, its notes, and the SessionStart fast path."""
