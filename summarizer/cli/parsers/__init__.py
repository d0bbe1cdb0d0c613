"""Parsers of the `ctxd` commands, apart from their handlers so that building them stays light."""
