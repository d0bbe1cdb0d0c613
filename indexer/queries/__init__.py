"""Read APIs over the index: sessions, agents, entries, meta, changes."""
