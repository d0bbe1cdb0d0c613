"""The SQLite index: opening it, its schema, transactions and the batch commit (I3)."""
