"""Handoff into subagents: what a subagent is told about itself as it starts."""
