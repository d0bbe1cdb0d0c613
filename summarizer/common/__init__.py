"""Shared helpers of the summarizer: tokens, budgets, text, memory records."""
