"""The spool: its lines, their limits, tailing with file identity, and change checks."""
