"""The single writer (I8): its lock, catch-up over the spool, transcript imports."""
