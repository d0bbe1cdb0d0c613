"""Redaction: secrets and `<private>` spans out of everything stored or logged (I10)."""
