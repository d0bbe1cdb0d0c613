"""The daemon's request channel (standard library only)."""
