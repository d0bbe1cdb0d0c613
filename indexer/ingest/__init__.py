"""Ingest passes: spool lines prepared, attributed and committed in batches."""
