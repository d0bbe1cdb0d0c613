"""One event to a redacted, normalized, unattributed entry (pure, no index)."""
