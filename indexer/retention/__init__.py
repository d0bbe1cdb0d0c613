"""What is removed: index rows, spool segments, sessions' spool lines."""
